// One NCCL operation, as a GPU level asks the backend for it
// (Backend::nccl issues a list of them as one NCCL group on a group's
// communicator). Plain values: the levels build them, the plugin maps them
// one to one onto NCCL's calls.
#pragma once

#include <cstddef>

#include "strata/types.hpp"

namespace strata::gpu {

struct NcclOp {
  enum class Kind {
    all_reduce,      // ncclAllReduce(send, recv, count)
    reduce,          // ncclReduce(send, recv, count, root = peer)
    broadcast,       // ncclBroadcast(send, recv, count, root = peer)
    reduce_scatter,  // ncclReduceScatter(send, recv, count per member)
    all_gather,      // ncclAllGather(send, recv, count per member)
    send,            // ncclSend(send, count, peer)
    recv,            // ncclRecv(recv, count, peer)
  };
  Kind kind = Kind::all_reduce;
  const void* send = nullptr;  // unused by recv
  void* recv = nullptr;        // unused by send
  std::size_t count = 0;       // elements of dtype
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // the reducing kinds: one NCCL reduces as strata does (plan::nccl_reduces)
  int peer = 0;                 // reduce, broadcast: the root; send, recv: the peer
};

}  // namespace strata::gpu
