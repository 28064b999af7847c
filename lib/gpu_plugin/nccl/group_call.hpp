// The NcclOp issuer: a GPU level's list of NCCL operations
// (gpu/nccl_op.hpp) as one NCCL group on a communicator, on the engine's
// stream. It maps each op one to one onto NCCL's call and decides nothing.
#pragma once

#include <span>

#include "gpu/nccl_op.hpp"
#include "gpu_plugin/nccl/comm.hpp"
#include "gpu_plugin/nccl/engine.hpp"

namespace strata::nccl {

// ncclGroupStart, `ops` in order (stopping at the first that fails),
// ncclGroupEnd, then the engine settles the enqueueing against the call's
// deadline (Engine::enqueued, naming `what`). A reducing op NCCL does not
// reduce as strata does throws BackendError before anything is issued.
void issue(Engine& e, Comm& comm, std::span<const gpu::NcclOp> ops, const char* what);

}  // namespace strata::nccl
