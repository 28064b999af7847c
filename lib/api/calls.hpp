// The public calls as validated values: each collective's arguments checked
// (the validate stage) and turned into the Call the Session runs, or into
// the InvalidArgument that call raises. Blocking calls refuse at once
// (Session::refuse, still collective); started requests carry the refusal
// and make it when they run, in their turn. Internal header.
#pragma once

#include <optional>

#include "exec/call.hpp"
#include "strata/errors.hpp"
#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata::api {

// A call as passed: `call` (options point at the caller's), and `invalid`
// when this rank's arguments failed validation.
struct Prepared {
  exec::Call call;
  std::optional<InvalidArgument> invalid;
};

// On a communicator of `size` ranks where this rank is `rank`.
Prepared prepare_all_reduce(int size, Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options);
Prepared prepare_reduce(int size, int rank, Tensor in, Tensor out, ReduceOp op, int root,
                        const CommunicationOptions& options);
Prepared prepare_broadcast(int size, Tensor buffer, int root, const CommunicationOptions& options);
Prepared prepare_reduce_scatter(int size, int rank, Tensor in, Tensor out, ReduceOp op,
                                const CommunicationOptions& options);
Prepared prepare_all_gather(int size, int rank, Tensor in, Tensor out, const CommunicationOptions& options);

// A batch_all_reduce's arguments checked; the error, if any.
std::optional<InvalidArgument> validate_batch_all_reduce(std::span<const Tensor> tensors, ReduceOp op,
                                                         const PackingOptions& packing,
                                                         const CommunicationOptions& options);

}  // namespace strata::api
