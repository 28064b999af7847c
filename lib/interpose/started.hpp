// The intercepted calls that start a request, after the re-entrancy check:
// the non-blocking collectives and persistent all-reduce. Decided exactly
// as their blocking forms (decide.hpp: same datatypes, ops, communicators,
// buffers, and the same reasons in the log); a call routed to strata
// starts (or binds) strata's request and returns a placeholder handle
// (requests.hpp), which the completion calls (completion.hpp) complete.
// Nothing runs here but the staging (packing a root's datatype): strata
// runs the collective inside the completion calls, or on its progress
// thread (docs/INTERPOSER.md, "Progress"). A call that is the first routed
// call on its communicator leaves creating strata's Communicator there, a
// collective step (comm_cache.hpp), to the request's (first) run.
// Everything else goes to PMPI_*, with the request MPI makes.
#pragma once

#include <mpi.h>

namespace strata::interpose {

int iall_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request* request);
int ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
            MPI_Request* request);
int ibroadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request);
int ireduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                          MPI_Request* request);
int iall_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request);

// The persistent all-reduce's MPI entry point a call falls through to:
// PMPIX_Allreduce_init (Open MPI's extension) or PMPI_Allreduce_init (MPI 4).
using AllReduceInit = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Info, MPI_Request*);

// MPIX_Allreduce_init / MPI_Allreduce_init (`call` names which): binds
// strata's all_reduce_init; `info` is not read when routed.
int all_reduce_init(const char* call, AllReduceInit fall_through, const void* sendbuf, void* recvbuf, int count,
                    MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request);

}  // namespace strata::interpose
