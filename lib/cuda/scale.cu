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
void divide_with(void* data, std::size_t count, std::size_t divisor, cudaStream_t stream) {
  using S = typename Codec::Storage;
  const Split split = split_elements<S>(count, data, data, data);
  const auto kernel = &divide_kernel<Codec>;
  launch(kernel, grid_for(kernel, split.threads), stream, static_cast<S*>(data), split.head, split.vectors, count,
         divisor);
}

}  // namespace

void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DataType::f32: return divide_with<NativeCodec<float>>(data, count, divisor, stream);
    case DataType::f64: return divide_with<NativeCodec<double>>(data, count, divisor, stream);
    case DataType::f16: return divide_with<F16Codec>(data, count, divisor, stream);
    case DataType::bf16: return divide_with<BF16Codec>(data, count, divisor, stream);
    case DataType::i8: return divide_with<NativeCodec<std::int8_t>>(data, count, divisor, stream);
    case DataType::u8: return divide_with<NativeCodec<std::uint8_t>>(data, count, divisor, stream);
    case DataType::i32: return divide_with<NativeCodec<std::int32_t>>(data, count, divisor, stream);
    case DataType::u32: return divide_with<NativeCodec<std::uint32_t>>(data, count, divisor, stream);
    case DataType::i64: return divide_with<NativeCodec<std::int64_t>>(data, count, divisor, stream);
    case DataType::u64: return divide_with<NativeCodec<std::uint64_t>>(data, count, divisor, stream);
  }
}

}  // namespace strata::cuda
