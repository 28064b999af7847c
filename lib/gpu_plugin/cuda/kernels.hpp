// strata's own CUDA kernels, callable from host code: element-wise
// reduction (psgpu, host-staged paths), MEAN scaling, and batched
// pack/unpack. All are asynchronous on `stream` and never synchronise.
//
// Semantics match lib/host/reduce_kernel.hpp bit for bit on non-NaN
// results: f16/bf16 sum and prod correctly rounded to nearest even per step
// (native paired instructions, the same bits as f32-then-round), integer
// sum/prod wrap, min/max return an operand's original bits and let a NaN
// through, integer division truncates toward zero. Any alignment and size:
// 16-byte vector loads where the pointers allow, scalar head and tail
// otherwise; grids sized to one wave of resident blocks (occupancy).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "strata/types.hpp"

namespace strata::cuda {

// dst[i] = a[i] op b[i], i < count. dst may be exactly a or b (no partial
// overlap). op != mean.
void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op,
            cudaStream_t stream);

// data[i] = data[i] / divisor in the dtype (mean's finish). divisor > 0.
void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, cudaStream_t stream);

// One tensor of a pack: `bytes` bytes at `ptr`, at byte `offset` of the packed buffer.
struct PackDesc {
  void* ptr;
  std::size_t bytes;
  std::size_t offset;
};

// Copy every described tensor into `packed` (pack) or back out (unpack), in
// one launch. `descs` is a DEVICE array of `n` descriptors.
void pack(void* packed, const PackDesc* descs, std::size_t n, std::size_t max_bytes, cudaStream_t stream);
void unpack(const void* packed, const PackDesc* descs, std::size_t n, std::size_t max_bytes, cudaStream_t stream);

// Holds `stream` until the word at `flag` (mapped pinned host memory, which
// the host writes) reaches `target`, compared modulo 2^32: a one-thread
// kernel polls it (cuda/gate.cu). Work enqueued on `stream` after it runs
// once the host opened the gate.
void hold_until(const volatile unsigned int* flag, unsigned int target, cudaStream_t stream);

}  // namespace strata::cuda
