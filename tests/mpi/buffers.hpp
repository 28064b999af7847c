// Byte buffers for any dtype, filled with a recognisable garbage pattern so
// that an output a collective forgot to write cannot pass by accident.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "strata/types.hpp"

namespace strata::test {

struct Buffer {
  Buffer(std::size_t count, DataType dtype) : bytes(count * dtype_size(dtype) + 1), count(count), dtype(dtype) {
    garbage();
  }
  void garbage() { std::memset(bytes.data(), 0xA5, bytes.size()); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  std::size_t size_bytes() const { return count * dtype_size(dtype); }
  Tensor tensor() { return Tensor{data(), count, dtype}; }
  void copy_from(const Buffer& other) { std::memcpy(data(), other.data(), size_bytes()); }

  std::vector<unsigned char> bytes;  // one spare byte, so data() is never null, even for count 0
  std::size_t count;
  DataType dtype;
};

inline constexpr DataType kAllDtypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                                          DataType::u8,  DataType::i32, DataType::u32, DataType::i64, DataType::u64};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max, ReduceOp::prod};

}  // namespace strata::test
