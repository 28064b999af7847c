// Element-wise reduction on the GPU: one kernel per (dtype, op), 40 in all.
// Each thread handles 16-byte vectors of the aligned body (grid-stride), and
// the few elements before and after it one by one. Results equal the host's
// (lib/host/reduce_kernel.cpp) bit for bit on every non-NaN result:
//   - integers: wrap-around sum and product, min/max;
//   - f32/f64: IEEE arithmetic without fused operations;
//   - f16/bf16 sum and prod: native paired instructions (__hadd2_rn,
//     __hmul2_rn on __half2 / __nv_bfloat162), correctly rounded to nearest
//     even; the host computes in f32 and rounds once, which gives the same
//     bits because f32 carries more than 2p + 2 significant bits of either
//     type (so rounding twice is innocuous; tests/unit/test_half_native
//     checks it on the host, test_gpu_kernels on a GPU);
//   - min/max of every floating type compare exactly (in f32 for f16/bf16)
//     and return one operand's original bits; a NaN operand wins.
// NaN results of sum/prod are a canonical NaN on the GPU (the host keeps an
// operand's payload).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/half.cuh"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/cuda/launch.cuh"

namespace strata::cuda {
namespace {

template <typename To, typename From>
__device__ __forceinline__ To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// A NaN in b wins, then the smaller (larger) of the two; a NaN in a stays.
template <ReduceOp Op, typename C>
__device__ __forceinline__ bool take_b(C a, C b) {
  if constexpr (Op == ReduceOp::min) return b < a || b != b;
  else return b > a || b != b;
}

// Types whose arithmetic the GPU does natively in the element's own type.
template <typename T, ReduceOp Op>
struct NativeOps {
  using Storage = T;
  __device__ static T one(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;  // wrap-around, defined for signed types too
      if constexpr (Op == ReduceOp::sum) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      else if constexpr (Op == ReduceOp::prod) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      else if constexpr (Op == ReduceOp::min) return b < a ? b : a;
      else return b > a ? b : a;
    } else {
      if constexpr (Op == ReduceOp::sum) return add_rn(a, b);
      else if constexpr (Op == ReduceOp::prod) return mul_rn(a, b);
      else return take_b<Op>(a, b) ? b : a;
    }
  }
  __device__ static uint4 vector(uint4 x, uint4 y) {
    constexpr int kPer = int(kVectorBytes / sizeof(T));
    T xs[kPer], ys[kPer];
    memcpy(xs, &x, sizeof x);
    memcpy(ys, &y, sizeof y);
#pragma unroll
    for (int k = 0; k < kPer; ++k) xs[k] = one(xs[k], ys[k]);
    memcpy(&x, xs, sizeof x);
    return x;
  }

 private:
  // Round-to-nearest adds and multiplies that the compiler may not fuse.
  __device__ static float add_rn(float a, float b) { return __fadd_rn(a, b); }
  __device__ static double add_rn(double a, double b) { return __dadd_rn(a, b); }
  __device__ static float mul_rn(float a, float b) { return __fmul_rn(a, b); }
  __device__ static double mul_rn(double a, double b) { return __dmul_rn(a, b); }
};

// f16 (H2 = __half2) and bf16 (H2 = __nv_bfloat162): two elements per
// 32-bit word through the paired instructions.
template <typename H2, ReduceOp Op>
struct HalfOps {
  using Storage = std::uint16_t;
  __device__ static float to_float(std::uint16_t v) {
    if constexpr (std::is_same_v<H2, __half2>) return __half2float(__ushort_as_half(v));
    else return bf16_to_f32(v);
  }
  __device__ static std::uint32_t pair(std::uint32_t a, std::uint32_t b) {
    if constexpr (Op == ReduceOp::sum) {
      return bits_as<std::uint32_t>(__hadd2_rn(bits_as<H2>(a), bits_as<H2>(b)));
    } else if constexpr (Op == ReduceOp::prod) {
      return bits_as<std::uint32_t>(__hmul2_rn(bits_as<H2>(a), bits_as<H2>(b)));
    } else {
      const auto lo = [](std::uint16_t x, std::uint16_t y) { return take_b<Op>(to_float(x), to_float(y)) ? y : x; };
      return std::uint32_t(lo(std::uint16_t(a), std::uint16_t(b))) |
             std::uint32_t(lo(std::uint16_t(a >> 16), std::uint16_t(b >> 16))) << 16;
    }
  }
  // One element: the pair's low lane (the high lane is a dummy zero).
  __device__ static std::uint16_t one(std::uint16_t a, std::uint16_t b) { return std::uint16_t(pair(a, b)); }
  __device__ static uint4 vector(uint4 x, uint4 y) {
    return make_uint4(pair(x.x, y.x), pair(x.y, y.y), pair(x.z, y.z), pair(x.w, y.w));
  }
};

// dst may be exactly a or b (in place), so none of the pointers is
// __restrict__; each vector is read completely before it is written.
template <typename Ops>
__global__ void reduce_kernel(typename Ops::Storage* dst, const typename Ops::Storage* a,
                              const typename Ops::Storage* b, std::size_t head, std::size_t vectors,
                              std::size_t count) {
  using S = typename Ops::Storage;
  constexpr std::size_t kPer = kVectorBytes / sizeof(S);
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const auto* va = reinterpret_cast<const uint4*>(a + head);
  const auto* vb = reinterpret_cast<const uint4*>(b + head);
  auto* vd = reinterpret_cast<uint4*>(dst + head);
  for (std::size_t i = start; i < vectors; i += stride) vd[i] = Ops::vector(va[i], vb[i]);
  for (std::size_t i = start; i < head; i += stride) dst[i] = Ops::one(a[i], b[i]);
  for (std::size_t i = head + vectors * kPer + start; i < count; i += stride) dst[i] = Ops::one(a[i], b[i]);
}

template <typename Ops>
void reduce_with(void* dst, const void* a, const void* b, std::size_t count, cudaStream_t stream) {
  using S = typename Ops::Storage;
  const Split split = split_elements<S>(count, dst, a, b);
  const auto kernel = &reduce_kernel<Ops>;
  launch(kernel, grid_for(kernel, split.threads), stream, static_cast<S*>(dst), static_cast<const S*>(a),
         static_cast<const S*>(b), split.head, split.vectors, count);
}

template <template <ReduceOp> class Ops>
void by_op(void* dst, const void* a, const void* b, std::size_t count, ReduceOp op, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return reduce_with<Ops<ReduceOp::sum>>(dst, a, b, count, stream);
    case ReduceOp::prod: return reduce_with<Ops<ReduceOp::prod>>(dst, a, b, count, stream);
    case ReduceOp::min: return reduce_with<Ops<ReduceOp::min>>(dst, a, b, count, stream);
    case ReduceOp::max: return reduce_with<Ops<ReduceOp::max>>(dst, a, b, count, stream);
  }
}

template <typename T>
struct Native {
  template <ReduceOp Op>
  using Ops = NativeOps<T, Op>;
};
template <typename H2>
struct Half {
  template <ReduceOp Op>
  using Ops = HalfOps<H2, Op>;
};

}  // namespace

void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op,
            cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DataType::f32: return by_op<Native<float>::Ops>(dst, a, b, count, op, stream);
    case DataType::f64: return by_op<Native<double>::Ops>(dst, a, b, count, op, stream);
    case DataType::f16: return by_op<Half<__half2>::Ops>(dst, a, b, count, op, stream);
    case DataType::bf16: return by_op<Half<__nv_bfloat162>::Ops>(dst, a, b, count, op, stream);
    case DataType::i8: return by_op<Native<std::int8_t>::Ops>(dst, a, b, count, op, stream);
    case DataType::u8: return by_op<Native<std::uint8_t>::Ops>(dst, a, b, count, op, stream);
    case DataType::i32: return by_op<Native<std::int32_t>::Ops>(dst, a, b, count, op, stream);
    case DataType::u32: return by_op<Native<std::uint32_t>::Ops>(dst, a, b, count, op, stream);
    case DataType::i64: return by_op<Native<std::int64_t>::Ops>(dst, a, b, count, op, stream);
    case DataType::u64: return by_op<Native<std::uint64_t>::Ops>(dst, a, b, count, op, stream);
  }
}

}  // namespace strata::cuda
