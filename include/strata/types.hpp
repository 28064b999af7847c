// Element types, reduction operators and the Tensor view: the vocabulary of
// every strata call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata {

enum class DataType { f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64 };

// mean = sum / number of contributors (ranks x replicas), in the tensor's
// own dtype (integers truncate toward zero).
enum class ReduceOp { sum, mean, min, max, prod };

// How a call is carried out: `automatic` follows the all_reduce_spec,
// `ring` forces xring, `nccl` forces NCCL (CUDA tensors only).
enum class Implementation { automatic, ring, nccl };

enum class Memory { host, cuda };

// The collectives an all_reduce_spec chooses algorithms for.
// reduce_scatter: rank r receives op over every rank's block r of its input
// (ncclReduceScatter, MPI_Reduce_scatter_block); all_gather: every rank
// receives every rank's input, block r from rank r (ncclAllGather,
// MPI_Allgather).
enum class Collective { all_reduce, reduce, broadcast, reduce_scatter, all_gather };

// A non-owning view of `count` contiguous elements. `device` is the CUDA
// device for Memory::cuda and ignored for host memory.
struct Tensor {
  void* data = nullptr;
  std::size_t count = 0;
  DataType dtype = DataType::f32;
  Memory memory = Memory::host;
  int device = -1;

  std::size_t bytes() const;
};

// Size of one element in bytes.
std::size_t dtype_size(DataType dtype);

// Lower-case names ("f32", "sum", "ring", "host"), used in messages and
// command-line flags.
std::string_view to_string(DataType dtype);
std::string_view to_string(ReduceOp op);
std::string_view to_string(Implementation implementation);
std::string_view to_string(Memory memory);
std::string_view to_string(Collective collective);

// Parse the names above; throw InvalidArgument naming `field` and the text
// when it is not one of them.
DataType parse_dtype(std::string_view text, std::string_view field = "dtype");
ReduceOp parse_reduce_op(std::string_view text, std::string_view field = "op");

}  // namespace strata
