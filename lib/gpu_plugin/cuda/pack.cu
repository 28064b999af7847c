// Batched pack/unpack: many tensors copied into one contiguous buffer (or
// back) in a single launch. Block row y serves descriptors y, y + gridDim.y,
// ...; the blocks of a row grid-stride over that tensor's bytes, 16 bytes at
// a time where source and destination agree modulo 16, else 4 or 1.
#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/cuda/launch.cuh"

namespace strata::cuda {
namespace {

template <typename V>
__device__ void copy_units(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t start,
                           std::size_t stride) {
  // Head up to dst's V boundary (src agrees modulo sizeof(V)), body in V, tail in bytes.
  const std::size_t mis = reinterpret_cast<std::uintptr_t>(dst) % sizeof(V);
  std::size_t head = mis == 0 ? 0 : sizeof(V) - mis;
  if (head > bytes) head = bytes;
  const std::size_t units = (bytes - head) / sizeof(V);
  auto* vd = reinterpret_cast<V*>(dst + head);
  const auto* vs = reinterpret_cast<const V*>(src + head);
  for (std::size_t i = start; i < units; i += stride) vd[i] = vs[i];
  for (std::size_t i = start; i < head; i += stride) dst[i] = src[i];
  for (std::size_t i = head + units * sizeof(V) + start; i < bytes; i += stride) dst[i] = src[i];
}

template <bool Pack>
__global__ void pack_kernel(std::byte* packed, const PackDesc* descs, std::size_t n) {
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t d = blockIdx.y; d < n; d += gridDim.y) {
    const PackDesc desc = descs[d];
    std::byte* dst = Pack ? packed + desc.offset : static_cast<std::byte*>(desc.ptr);
    const std::byte* src = Pack ? static_cast<const std::byte*>(desc.ptr) : packed + desc.offset;
    const std::uintptr_t delta = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
    if (delta % 16 == 0) copy_units<uint4>(dst, src, desc.bytes, start, stride);
    else if (delta % 4 == 0) copy_units<unsigned>(dst, src, desc.bytes, start, stride);
    else copy_units<unsigned char>(dst, src, desc.bytes, start, stride);
  }
}

template <bool Pack>
void copy_pieces(const void* packed, const PackDesc* descs, std::size_t n, std::size_t max_bytes,
                 cudaStream_t stream) {
  if (n == 0 || max_bytes == 0) return;
  // Split the usual block budget over up to 8 rows; more rows loop.
  const unsigned rows = unsigned(n < 65535 ? n : 65535);
  const auto kernel = &pack_kernel<Pack>;
  const unsigned per_row = grid_for(kernel, (max_bytes + kVectorBytes - 1) / kVectorBytes) / (rows < 8 ? rows : 8);
  launch(kernel, dim3(per_row > 0 ? per_row : 1, rows), stream, static_cast<std::byte*>(const_cast<void*>(packed)),
         descs, n);
}

}  // namespace

void pack(void* packed, const PackDesc* descs, std::size_t n, std::size_t max_bytes, cudaStream_t stream) {
  copy_pieces<true>(packed, descs, n, max_bytes, stream);
}

void unpack(const void* packed, const PackDesc* descs, std::size_t n, std::size_t max_bytes, cudaStream_t stream) {
  copy_pieces<false>(packed, descs, n, max_bytes, stream);
}

}  // namespace strata::cuda
