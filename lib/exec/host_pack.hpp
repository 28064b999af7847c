// A batch's pack on host memory, between the caller's tensors and one
// staging buffer: the pieces gathered in (local replicas combined in a
// fixed order, so the result is deterministic) and the result spread back.
// Internal header.
#pragma once

#include <cstddef>
#include <vector>

#include "plan/packing.hpp"
#include "strata/types.hpp"

namespace strata::exec {

// batch[k][r]: tensor k on local replica r (every tensor the same replica count).
using ReplicaBatch = std::vector<std::vector<Tensor>>;

// Where element `offset` of `tensor` lies.
std::byte* element_at(const Tensor& tensor, std::size_t offset);

// Copies `pack`'s pieces of replica 0 into `stage` (pack.bytes() bytes),
// then, when `combine`, reduces replicas 1.. into it with `op` (a level op:
// sum for mean), in replica order.
void gather_pack(const plan::Pack& pack, const ReplicaBatch& batch, bool combine, ReduceOp op, std::byte* stage);

// Copies the pack's result in `stage` into every replica of its pieces.
void spread_pack(const plan::Pack& pack, const ReplicaBatch& batch, const std::byte* stage);

}  // namespace strata::exec
