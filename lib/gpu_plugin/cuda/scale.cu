// MEAN's finish on the GPU: divide every element by the contributor count in
// the tensor's own dtype, exactly like host::divide_by (integers truncate
// toward zero in a wide type, f16/bf16 divide in f32 and round once).
// Floating quotients come from cuda::quotient, bit-identical to the
// division and as fast on zeros as on other values; f16/bf16 round back
// with the hardware's paired conversion. Both were measured on an H200
// (docs/PERFORMANCE.md, GPU: the divide at 92-93% of a copy's bandwidth;
// bf16 ran at 41% on zeros and 85% otherwise before this). A NaN result is
// canonical, as the GPU's division makes it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/half.cuh"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/cuda/launch.cuh"
#include "gpu_plugin/cuda/quotient.hpp"

namespace strata::cuda {
namespace {

// The divisor as each thread uses it: wide for integers, the compute type
// and its reciprocal for floating types (converted once, as the host
// converts it once). Made inside the kernel, so the launch passes the
// plain count (the CUDA test double reads the kernel's arguments).
template <typename C, bool = std::is_integral_v<C>>
struct Divisor {
  using Wide = std::conditional_t<std::is_signed_v<C>, long long, unsigned long long>;
  Wide value;
  __device__ explicit Divisor(std::size_t d) : value(static_cast<Wide>(d)) {}
  __device__ C apply(C v) const { return static_cast<C>(static_cast<Wide>(v) / value); }
};
template <typename C>
struct Divisor<C, false> {
  C value, reciprocal;
  __device__ explicit Divisor(std::size_t d) : value(static_cast<C>(d)), reciprocal(reciprocal_of(value)) {}
  __device__ C apply(C v) const { return quotient(v, value, reciprocal); }
};

// Rounds a quotient back to its 16-bit type with the hardware conversion
// (round to nearest even, like Codec::store; a NaN comes out canonical, as
// the division already made it), two at a time in the vector body: the
// integer rounding of Codec::store made this kernel compute-bound.
template <typename Codec>
__device__ __forceinline__ std::uint16_t narrowed(float v) {
  if constexpr (std::is_same_v<Codec, BF16Codec>) return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else return __half_as_ushort(__float2half_rn(v));
}
template <typename Codec>
__device__ __forceinline__ std::uint32_t narrowed_pair(float lo, float hi) {
  if constexpr (std::is_same_v<Codec, BF16Codec>) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    return std::uint32_t(__bfloat16_as_ushort(pair.x)) | std::uint32_t(__bfloat16_as_ushort(pair.y)) << 16;
  } else {
    const __half2 pair = __floats2half2_rn(lo, hi);
    return std::uint32_t(__half_as_ushort(pair.x)) | std::uint32_t(__half_as_ushort(pair.y)) << 16;
  }
}

template <typename Codec>
constexpr bool kNarrows = !std::is_same_v<typename Codec::Storage, typename Codec::Compute>;

template <typename Codec>
__device__ __forceinline__ typename Codec::Storage divided(typename Codec::Storage v,
                                                           const Divisor<typename Codec::Compute>& divisor) {
  if constexpr (kNarrows<Codec>) return narrowed<Codec>(divisor.apply(Codec::load(v)));
  else return divisor.apply(v);
}

// One 16-byte vector of the aligned body.
template <typename Codec>
__device__ __forceinline__ uint4 divided_vector(uint4 x, const Divisor<typename Codec::Compute>& divisor) {
  using S = typename Codec::Storage;
  if constexpr (kNarrows<Codec>) {
    std::uint32_t words[4];
    memcpy(words, &x, sizeof x);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      words[k] = narrowed_pair<Codec>(divisor.apply(Codec::load(std::uint16_t(words[k]))),
                                      divisor.apply(Codec::load(std::uint16_t(words[k] >> 16))));
    memcpy(&x, words, sizeof x);
  } else {
    constexpr int kPer = kVectorBytes / sizeof(S);
    S xs[kPer];
    memcpy(xs, &x, sizeof x);
#pragma unroll
    for (int k = 0; k < kPer; ++k) xs[k] = divisor.apply(xs[k]);
    memcpy(&x, xs, sizeof x);
  }
  return x;
}

template <typename Codec>
__global__ void divide_kernel(typename Codec::Storage* data, std::size_t head, std::size_t vectors, std::size_t count,
                              std::size_t contributors) {
  using S = typename Codec::Storage;
  const Divisor<typename Codec::Compute> divisor(contributors);
  constexpr int kPer = kVectorBytes / sizeof(S);
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  auto* vd = reinterpret_cast<uint4*>(data + head);
  for (std::size_t i = start; i < vectors; i += stride) vd[i] = divided_vector<Codec>(vd[i], divisor);
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
