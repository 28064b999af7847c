// The intercepted collectives, after the re-entrancy check: decide
// (decide.hpp), log the decision, then run the call in strata or hand it to
// PMPI_*. Each has exactly the contract of the MPI function it replaces:
// same arguments, same buffers written, MPI_SUCCESS or an MPI error code
// passed through the communicator's error handler (errors.hpp).
// Each first runs every active routed request (requests.hpp,
// advance_all_routed): routed or not, the call may wait for a peer that is
// running one of them and waits for this rank there.
#pragma once

#include <mpi.h>

namespace strata::interpose {

int all_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
int broadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);
int reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm);

}  // namespace strata::interpose
