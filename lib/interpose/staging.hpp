// The buffers strata runs on for one routed call, shared by the blocking
// form (collectives.cpp) and the started one (started.cpp), so that both
// pack, unpack and place in-place results alike.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

#include "comm_cache.hpp"
#include "decide.hpp"
#include "strata/types.hpp"

namespace strata::interpose {

// One routed call's strata side on this rank, prepared on the calling
// thread: the tensors strata runs on, the bytes this rank packs a datatype
// into where it is not plain bytes, and what the rank does once strata's
// part is done (unpack, or move an in-place result to where MPI wants it),
// returning an MPI code. The blocking form runs `finish` right after
// strata's call; a started request runs it when a completion call finds
// strata's part done, on the application's thread (it may call MPI).
// `in`/`out` may point into `bytes`, which is never resized once staged
// (moving a Staged keeps them valid).
struct Staged {
  Tensor in, out;
  std::vector<unsigned char> bytes;
  std::function<int()> finish;  // empty: nothing to do
};

// The staging of each call for a decision routed to strata, this rank at
// `seat` (`d`, `root` as decided). `started`: for a request, whose `finish` may
// run after the program freed its datatype (MPI lets it: the operation
// completes normally), so `finish` unpacks with a duplicate of its own.
// Each returns MPI_SUCCESS, or the code of a failed PMPI_Pack /
// PMPI_Type_get_extent / PMPI_Type_dup (which has called the error handler).
int stage_reduction(const void* sendbuf, void* recvbuf, const Decision& d, int root, Seat seat, Staged& s);
int stage_broadcast(void* buffer, int count, MPI_Datatype type, const Decision& d, int root, MPI_Comm comm, Seat seat,
                    bool started, Staged& s);
int stage_reduce_scatter(const void* sendbuf, void* recvbuf, const Decision& d, Seat seat, Staged& s);
int stage_all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, const Decision& d, MPI_Comm comm, Seat seat, bool started, Staged& s);

}  // namespace strata::interpose
