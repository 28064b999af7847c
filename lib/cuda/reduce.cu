// Element-wise reduction on the GPU: one kernel per (dtype, op), 40 in all.
// Each thread handles 16-byte vectors of the aligned body (grid-stride), and
// the few elements before and after it one by one. The operators are the
// host's (lib/host/reduce_kernel.cpp), so both sides produce the same bits.
#include <type_traits>

#include "cuda/check.hpp"
#include "cuda/half.cuh"
#include "cuda/kernels.hpp"
#include "cuda/launch.cuh"

namespace strata::cuda {
namespace {

template <typename T, ReduceOp Op>
__device__ __forceinline__ T apply(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap-around, defined for signed types too
    if constexpr (Op == ReduceOp::sum) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    else if constexpr (Op == ReduceOp::prod) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    else if constexpr (Op == ReduceOp::min) return b < a ? b : a;
    else return b > a ? b : a;
  } else {
    if constexpr (Op == ReduceOp::sum) return a + b;
    else if constexpr (Op == ReduceOp::prod) return a * b;
    else if constexpr (Op == ReduceOp::min) return (b < a || b != b) ? b : a;  // a NaN is never hidden
    else return (b > a || b != b) ? b : a;
  }
}

template <typename Codec, ReduceOp Op>
__device__ __forceinline__ typename Codec::Storage one(typename Codec::Storage a, typename Codec::Storage b) {
  using C = typename Codec::Compute;
  return Codec::store(apply<C, Op>(Codec::load(a), Codec::load(b)));
}

template <typename Codec, ReduceOp Op>
__global__ void reduce_kernel(typename Codec::Storage* __restrict__ dst, const typename Codec::Storage* a,
                              const typename Codec::Storage* b, std::size_t head, std::size_t vectors,
                              std::size_t count) {
  using S = typename Codec::Storage;
  constexpr int kPer = kVectorBytes / sizeof(S);
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  // dst may alias a or b exactly, so no __restrict__ on the inputs; each
  // vector is read completely before it is written.
  const auto* va = reinterpret_cast<const uint4*>(a + head);
  const auto* vb = reinterpret_cast<const uint4*>(b + head);
  auto* vd = reinterpret_cast<uint4*>(dst + head);
  for (std::size_t i = start; i < vectors; i += stride) {
    uint4 x = va[i];
    const uint4 y = vb[i];
    S* xs = reinterpret_cast<S*>(&x);
    const S* ys = reinterpret_cast<const S*>(&y);
#pragma unroll
    for (int k = 0; k < kPer; ++k) xs[k] = one<Codec, Op>(xs[k], ys[k]);
    vd[i] = x;
  }
  for (std::size_t i = start; i < head; i += stride) dst[i] = one<Codec, Op>(a[i], b[i]);
  for (std::size_t i = head + vectors * kPer + start; i < count; i += stride) dst[i] = one<Codec, Op>(a[i], b[i]);
}

template <typename Codec, ReduceOp Op>
void launch(void* dst, const void* a, const void* b, std::size_t count, cudaStream_t stream) {
  using S = typename Codec::Storage;
  constexpr std::size_t kPer = kVectorBytes / sizeof(S);
  const std::size_t head = aligned_head<S>(count, dst, a, b);
  const std::size_t vectors = (count - head) / kPer;
  const std::size_t scalar = count - vectors * kPer;
  reduce_kernel<Codec, Op><<<grid_for(vectors > scalar ? vectors : scalar), kThreads, 0, stream>>>(
      static_cast<S*>(dst), static_cast<const S*>(a), static_cast<const S*>(b), head, vectors, count);
  STRATA_CHECK_CUDA(cudaGetLastError());
}

template <typename Codec>
void by_op(void* dst, const void* a, const void* b, std::size_t count, ReduceOp op, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return launch<Codec, ReduceOp::sum>(dst, a, b, count, stream);
    case ReduceOp::prod: return launch<Codec, ReduceOp::prod>(dst, a, b, count, stream);
    case ReduceOp::min: return launch<Codec, ReduceOp::min>(dst, a, b, count, stream);
    case ReduceOp::max: return launch<Codec, ReduceOp::max>(dst, a, b, count, stream);
  }
}

}  // namespace

unsigned grid_for(std::size_t work) {
  // A few waves of resident blocks per SM; asked once per process (strata
  // drives one device per rank).
  static const unsigned cap = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
      sms = 108;
    return unsigned(sms) * 8u;
  }();
  const std::size_t blocks = (work + kThreads - 1) / kThreads;
  return blocks == 0 ? 1u : blocks < cap ? unsigned(blocks) : cap;
}

void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op,
            cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DataType::f32: return by_op<NativeCodec<float>>(dst, a, b, count, op, stream);
    case DataType::f64: return by_op<NativeCodec<double>>(dst, a, b, count, op, stream);
    case DataType::f16: return by_op<F16Codec>(dst, a, b, count, op, stream);
    case DataType::bf16: return by_op<BF16Codec>(dst, a, b, count, op, stream);
    case DataType::i8: return by_op<NativeCodec<std::int8_t>>(dst, a, b, count, op, stream);
    case DataType::u8: return by_op<NativeCodec<std::uint8_t>>(dst, a, b, count, op, stream);
    case DataType::i32: return by_op<NativeCodec<std::int32_t>>(dst, a, b, count, op, stream);
    case DataType::u32: return by_op<NativeCodec<std::uint32_t>>(dst, a, b, count, op, stream);
    case DataType::i64: return by_op<NativeCodec<std::int64_t>>(dst, a, b, count, op, stream);
    case DataType::u64: return by_op<NativeCodec<std::uint64_t>>(dst, a, b, count, op, stream);
  }
}

}  // namespace strata::cuda
