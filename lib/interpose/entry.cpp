// The MPI functions this library replaces, over MPI's profiling interface:
//   - the blocking collectives MPI_Allreduce, MPI_Reduce, MPI_Bcast,
//     MPI_Reduce_scatter_block and MPI_Allgather (collectives.hpp);
//   - their non-blocking forms MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast,
//     MPI_Ireduce_scatter_block, MPI_Iallgather, and persistent all-reduce,
//     MPIX_Allreduce_init (Open MPI's extension) and MPI_Allreduce_init
//     (MPI 4 libraries), which start requests (started.hpp);
//   - what completes, frees, queries or starts a request: MPI_Wait,
//     MPI_Test, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Testall,
//     MPI_Testany, MPI_Testsome, MPI_Request_free, MPI_Request_get_status,
//     MPI_Start, MPI_Startall (completion.hpp), since a routed request's
//     handle may reach any of them; and MPI_Comm_free and
//     MPI_Comm_disconnect, which run the routed requests first.
// Fortran programs reach the blocking collectives through the Fortran
// bindings' own entry points, defined in fortran.cpp.
// Preloaded (LD_PRELOAD) or linked before libmpi, these definitions win
// over libmpi's; everything else, and every call they do not route to
// strata, goes to libmpi's PMPI_* entry points. Not replaced:
// MPI_Reduce_scatter, whose blocks may differ in size from rank to rank,
// which strata's reduce_scatter does not serve, and MPI_Cancel (MPI forbids
// cancelling a collective's request).
//
// Only these symbols are exported (the rest of the library is built with
// hidden visibility).
#include <mpi.h>
// (Not in the standard-ABI build, STRATA_MPI_ABI: the ABI has no extensions.)
#if !defined(STRATA_MPI_ABI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Allreduce_init
#endif

#include "collectives.hpp"
#include "completion.hpp"
#include "guard.hpp"
#include "started.hpp"

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

// --- Starting requests ------------------------------------------------------

STRATA_MPI_EXPORT int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                     MPI_Comm comm, MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  return strata::interpose::iall_reduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

STRATA_MPI_EXPORT int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                  int root, MPI_Comm comm, MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
  return strata::interpose::ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

STRATA_MPI_EXPORT int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                                 MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  return strata::interpose::ibroadcast(buffer, count, datatype, root, comm, request);
}

STRATA_MPI_EXPORT int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                                MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
  return strata::interpose::ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

STRATA_MPI_EXPORT int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  return strata::interpose::iall_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

#if STRATA_MPI_HAS_MPIX_ALLREDUCE_INIT
STRATA_MPI_EXPORT int MPIX_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                                          MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPIX_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  return strata::interpose::all_reduce_init("MPIX_Allreduce_init", PMPIX_Allreduce_init, sendbuf, recvbuf, count,
                                            datatype, op, comm, info, request);
}
#endif

#if STRATA_MPI_HAS_ALLREDUCE_INIT
STRATA_MPI_EXPORT int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  return strata::interpose::all_reduce_init("MPI_Allreduce_init", PMPI_Allreduce_init, sendbuf, recvbuf, count,
                                            datatype, op, comm, info, request);
}
#endif

// --- Completing, freeing and starting requests ------------------------------
// (strata's own requests are MPI's: called from strata, straight to PMPI_*.)

STRATA_MPI_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Wait(request, status);
  return strata::interpose::wait(request, status);
}

STRATA_MPI_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Test(request, flag, status);
  return strata::interpose::test(request, flag, status);
}

STRATA_MPI_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status* array_of_statuses) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Waitall(count, array_of_requests, array_of_statuses);
  return strata::interpose::wait_all(count, array_of_requests, array_of_statuses);
}

STRATA_MPI_EXPORT int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index, MPI_Status* status) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Waitany(count, array_of_requests, index, status);
  return strata::interpose::wait_any(count, array_of_requests, index, status);
}

STRATA_MPI_EXPORT int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount,
                                   int array_of_indices[], MPI_Status array_of_statuses[]) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
  return strata::interpose::wait_some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
}

STRATA_MPI_EXPORT int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                                  MPI_Status array_of_statuses[]) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
  return strata::interpose::test_all(count, array_of_requests, flag, array_of_statuses);
}

STRATA_MPI_EXPORT int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                                  MPI_Status* status) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Testany(count, array_of_requests, index, flag, status);
  return strata::interpose::test_any(count, array_of_requests, index, flag, status);
}

STRATA_MPI_EXPORT int MPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount,
                                   int array_of_indices[], MPI_Status array_of_statuses[]) {
  if (strata::interpose::called_by_strata(STRATA_CALLER))
    return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
  return strata::interpose::test_some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
}

STRATA_MPI_EXPORT int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Request_get_status(request, flag, status);
  return strata::interpose::request_get_status(request, flag, status);
}

STRATA_MPI_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Request_free(request);
  return strata::interpose::request_free(request);
}

STRATA_MPI_EXPORT int MPI_Start(MPI_Request* request) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Start(request);
  return strata::interpose::start(request);
}

STRATA_MPI_EXPORT int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Startall(count, array_of_requests);
  return strata::interpose::start_all(count, array_of_requests);
}

STRATA_MPI_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Comm_free(comm);
  return strata::interpose::comm_free(comm);
}

STRATA_MPI_EXPORT int MPI_Comm_disconnect(MPI_Comm* comm) {
  if (strata::interpose::called_by_strata(STRATA_CALLER)) return PMPI_Comm_disconnect(comm);
  return strata::interpose::comm_disconnect(comm);
}
