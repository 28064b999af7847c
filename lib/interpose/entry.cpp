// The MPI functions this library replaces, over MPI's profiling interface:
// MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Reduce_scatter_block and
// MPI_Allgather. Preloaded (LD_PRELOAD) or linked before libmpi, these
// definitions win over libmpi's; everything else, and every call they do
// not route to strata, goes to libmpi's PMPI_* entry points.
// MPI_Iallreduce and the other non-blocking collectives are not replaced:
// strata has no non-blocking calls (see docs/INTERPOSER.md). Nor is
// MPI_Reduce_scatter, whose blocks may differ in size from rank to rank,
// which strata's reduce_scatter does not serve.
//
// Only these five symbols are exported (the rest of the library is built
// with hidden visibility).
#include <mpi.h>

#include "collectives.hpp"
#include "guard.hpp"

#define STRATA_MPI_EXPORT extern "C" __attribute__((visibility("default")))

// The caller's address: a call from libstrata itself goes straight to MPI.
#define STRATA_CALLER __builtin_extract_return_addr(__builtin_return_address(0))

STRATA_MPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  return strata::interpose::all_reduce(sendbuf, recvbuf, count, datatype, op, comm);
}

STRATA_MPI_EXPORT int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                 int root, MPI_Comm comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return strata::interpose::reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

STRATA_MPI_EXPORT int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Bcast(buffer, count, datatype, root, comm);
  return strata::interpose::broadcast(buffer, count, datatype, root, comm);
}

STRATA_MPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  return strata::interpose::reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

STRATA_MPI_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return strata::interpose::all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
