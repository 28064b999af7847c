// MEAN's finish on the GPU: divide every element by the contributor count in
// the tensor's own dtype, exactly like host::divide_by (integers truncate
// toward zero in a wide type, f16/bf16 divide in f32 and round once).
#include <type_traits>

#include "cuda/check.hpp"
#include "cuda/half.cuh"
#include "cuda/kernels.hpp"
#include "cuda/launch.cuh"

namespace strata::cuda {
namespace {

template <typename Codec>
__device__ __forceinline__ typename Codec::Storage divided(typename Codec::Storage v, std::size_t divisor) {
  using C = typename Codec::Compute;
  if constexpr (std::is_integral_v<C>) {
    using Wide = std::conditional_t<std::is_signed_v<C>, long long, unsigned long long>;
    return static_cast<C>(static_cast<Wide>(v) / static_cast<Wide>(divisor));
  } else {
    return Codec::store(Codec::load(v) / static_cast<C>(divisor));
  }
}

template <typename Codec>
__global__ void divide_kernel(typename Codec::Storage* data, std::size_t head, std::size_t vectors, std::size_t count,
                              std::size_t divisor) {
  using S = typename Codec::Storage;
  constexpr int kPer = kVectorBytes / sizeof(S);
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  auto* vd = reinterpret_cast<uint4*>(data + head);
  for (std::size_t i = start; i < vectors; i += stride) {
    uint4 x = vd[i];
    S* xs = reinterpret_cast<S*>(&x);
#pragma unroll
    for (int k = 0; k < kPer; ++k) xs[k] = divided<Codec>(xs[k], divisor);
    vd[i] = x;
  }
  for (std::size_t i = start; i < head; i += stride) data[i] = divided<Codec>(data[i], divisor);
  for (std::size_t i = head + vectors * kPer + start; i < count; i += stride) data[i] = divided<Codec>(data[i], divisor);
}

template <typename Codec>
void launch(void* data, std::size_t count, std::size_t divisor, cudaStream_t stream) {
  using S = typename Codec::Storage;
  constexpr std::size_t kPer = kVectorBytes / sizeof(S);
  const std::size_t head = aligned_head<S>(count, data, data, data);
  const std::size_t vectors = (count - head) / kPer;
  const std::size_t scalar = count - vectors * kPer;
  const auto kernel = &divide_kernel<Codec>;
  kernel<<<grid_for(kernel, vectors > scalar ? vectors : scalar), kThreads, 0, stream>>>(
      static_cast<S*>(data), head, vectors, count, divisor);
  STRATA_CHECK_CUDA(cudaGetLastError());
}

}  // namespace

void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DataType::f32: return launch<NativeCodec<float>>(data, count, divisor, stream);
    case DataType::f64: return launch<NativeCodec<double>>(data, count, divisor, stream);
    case DataType::f16: return launch<F16Codec>(data, count, divisor, stream);
    case DataType::bf16: return launch<BF16Codec>(data, count, divisor, stream);
    case DataType::i8: return launch<NativeCodec<std::int8_t>>(data, count, divisor, stream);
    case DataType::u8: return launch<NativeCodec<std::uint8_t>>(data, count, divisor, stream);
    case DataType::i32: return launch<NativeCodec<std::int32_t>>(data, count, divisor, stream);
    case DataType::u32: return launch<NativeCodec<std::uint32_t>>(data, count, divisor, stream);
    case DataType::i64: return launch<NativeCodec<std::int64_t>>(data, count, divisor, stream);
    case DataType::u64: return launch<NativeCodec<std::uint64_t>>(data, count, divisor, stream);
  }
}

}  // namespace strata::cuda
