#include "exec/host_pack.hpp"

#include <cstring>

#include "host/reduce_kernel.hpp"
#include "util/copy.hpp"

namespace strata::exec {

std::byte* element_at(const Tensor& tensor, std::size_t offset) {
  return static_cast<std::byte*>(tensor.data) + offset * dtype_size(tensor.dtype);
}

void gather_pack(const plan::Pack& pack, const ReplicaBatch& batch, bool combine, ReduceOp op, std::byte* stage) {
  const std::size_t element = dtype_size(pack.dtype);
  std::byte* cursor = stage;
  for (const plan::PackPiece& piece : pack.pieces) {
    const auto& copies = batch[piece.tensor];
    util::copy_bytes(cursor, element_at(copies[0], piece.offset), piece.count * element);
    if (combine)
      for (std::size_t r = 1; r < copies.size(); ++r)
        host::reduce_into(cursor, cursor, element_at(copies[r], piece.offset), piece.count, pack.dtype, op);
    cursor += piece.count * element;
  }
}

void spread_pack(const plan::Pack& pack, const ReplicaBatch& batch, const std::byte* stage) {
  const std::size_t element = dtype_size(pack.dtype);
  const std::byte* cursor = stage;
  for (const plan::PackPiece& piece : pack.pieces) {
    for (const Tensor& copy : batch[piece.tensor]) util::copy_bytes(element_at(copy, piece.offset), cursor, piece.count * element);
    cursor += piece.count * element;
  }
}

}  // namespace strata::exec
