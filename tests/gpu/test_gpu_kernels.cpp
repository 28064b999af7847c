// strata's CUDA kernels against the host kernels (lib/host/reduce_kernel):
// every dtype x op, sizes around the vector width, pointers misaligned in
// agreeing and disagreeing ways; every f16/bf16 pattern against special and
// random partners (the native paired instructions give the host's
// f32-then-round bits; min/max return an operand's original bits); NaN in
// f32/f64 min/max; MEAN scaling, also over every class of floating value;
// batched pack/unpack. The results must be
// bit-identical (NaN results: NaN on both sides). Exits 77 without a CUDA
// device.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "util/half.hpp"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_test.hpp"
#include "host/reduce_kernel.hpp"

using namespace strata;

namespace {
int failures = 0;

#define CUDA_OK(call)                                                                           \
  do {                                                                                          \
    cudaError_t rc_ = (call);                                                                   \
    if (rc_ != cudaSuccess) {                                                                   \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(rc_), __FILE__, __LINE__);    \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// Finite values that exercise rounding (f16/bf16) and wrap (integers).
void fill(std::vector<std::byte>& bytes, DataType dtype, std::mt19937& rng) {
  const std::size_t element = dtype_size(dtype), n = bytes.size() / element;
  std::uniform_int_distribution<int> small(-1000, 1000);
  for (std::size_t i = 0; i < n; ++i) {
    const float f = float(small(rng)) / 7.0f;
    std::byte* at = bytes.data() + i * element;
    switch (dtype) {
      case DataType::f32: std::memcpy(at, &f, 4); break;
      case DataType::f64: { const double d = double(small(rng)) / 7.0; std::memcpy(at, &d, 8); break; }
      case DataType::f16: { const auto h = util::f32_to_f16(f); std::memcpy(at, &h, 2); break; }
      case DataType::bf16: { const auto h = util::f32_to_bf16(f); std::memcpy(at, &h, 2); break; }
      default: for (std::size_t b = 0; b < element; ++b) at[b] = std::byte(rng()); break;
    }
  }
}

void check_reduce(DataType dtype, ReduceOp op, std::size_t count, std::size_t off_d, std::size_t off_a,
                  std::size_t off_b, std::mt19937& rng) {
  const std::size_t e = dtype_size(dtype), bytes = count * e, pad = 64;
  std::vector<std::byte> a(bytes), b(bytes), want(bytes), got(bytes);
  fill(a, dtype, rng);
  fill(b, dtype, rng);
  host::reduce_into(want.data(), a.data(), b.data(), count, dtype, op);
  std::byte *da, *db, *dd;
  CUDA_OK(cudaMalloc(&da, bytes + pad));
  CUDA_OK(cudaMalloc(&db, bytes + pad));
  CUDA_OK(cudaMalloc(&dd, bytes + pad));
  CUDA_OK(cudaMemcpy(da + off_a * e, a.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db + off_b * e, b.data(), bytes, cudaMemcpyHostToDevice));
  cuda::reduce(dd + off_d * e, da + off_a * e, db + off_b * e, count, dtype, op, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got.data(), dd + off_d * e, bytes, cudaMemcpyDeviceToHost));
  if (std::memcmp(got.data(), want.data(), bytes) != 0) {
    ++failures;
    std::printf("FAIL reduce %s %s count %zu offsets d%zu a%zu b%zu\n", std::string(to_string(dtype)).c_str(),
                std::string(to_string(op)).c_str(), count, off_d, off_a, off_b);
  }
  // In place (dst == a).
  cuda::reduce(da + off_a * e, da + off_a * e, db + off_b * e, count, dtype, op, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got.data(), da + off_a * e, bytes, cudaMemcpyDeviceToHost));
  if (std::memcmp(got.data(), want.data(), bytes) != 0) {
    ++failures;
    std::printf("FAIL in-place reduce %s %s count %zu\n", std::string(to_string(dtype)).c_str(),
                std::string(to_string(op)).c_str(), count);
  }
  cudaFree(da), cudaFree(db), cudaFree(dd);
}

void check_divide(DataType dtype, std::size_t count, std::size_t offset, std::size_t divisor, std::mt19937& rng) {
  const std::size_t e = dtype_size(dtype), bytes = count * e;
  std::vector<std::byte> data(bytes), got(bytes);
  fill(data, dtype, rng);
  std::byte* d;
  CUDA_OK(cudaMalloc(&d, bytes + 64));
  CUDA_OK(cudaMemcpy(d + offset * e, data.data(), bytes, cudaMemcpyHostToDevice));
  host::divide_by(data.data(), count, dtype, divisor);
  cuda::divide(d + offset * e, count, dtype, divisor, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got.data(), d + offset * e, bytes, cudaMemcpyDeviceToHost));
  if (std::memcmp(got.data(), data.data(), bytes) != 0) {
    ++failures;
    std::printf("FAIL divide %s count %zu by %zu\n", std::string(to_string(dtype)).c_str(), count, divisor);
  }
  cudaFree(d);
}

void check_pack(std::mt19937& rng) {
  // Tensors of odd sizes at odd addresses, packed at 16-byte offsets.
  const std::vector<std::size_t> sizes = {1, 15, 16, 17, 1000, 4097, 65536 + 3, 3};
  std::vector<std::vector<std::byte>> host(sizes.size());
  std::vector<cuda::PackDesc> descs;
  std::byte* base;
  std::size_t total = 0, offset = 0, largest = 0;
  for (std::size_t s : sizes) total += s + 32;
  CUDA_OK(cudaMalloc(&base, total));
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    host[i].resize(sizes[i]);
    for (auto& b : host[i]) b = std::byte(rng());
    std::byte* p = base + at + (i % 5);
    CUDA_OK(cudaMemcpy(p, host[i].data(), sizes[i], cudaMemcpyHostToDevice));
    descs.push_back({p, sizes[i], offset});
    offset += (sizes[i] + 15) / 16 * 16;
    largest = std::max(largest, sizes[i]);
    at += sizes[i] + 32;
  }
  std::byte *packed, *ddescs;
  CUDA_OK(cudaMalloc(&packed, offset));
  CUDA_OK(cudaMalloc(&ddescs, descs.size() * sizeof(cuda::PackDesc)));
  CUDA_OK(cudaMemcpy(ddescs, descs.data(), descs.size() * sizeof(cuda::PackDesc), cudaMemcpyHostToDevice));
  auto* dd = reinterpret_cast<cuda::PackDesc*>(ddescs);
  cuda::pack(packed, dd, descs.size(), largest, nullptr);
  CUDA_OK(cudaMemset(base, 0, total));
  cuda::unpack(packed, dd, descs.size(), largest, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::byte> got(sizes[i]);
    CUDA_OK(cudaMemcpy(got.data(), descs[i].ptr, sizes[i], cudaMemcpyDeviceToHost));
    if (got != host[i]) {
      ++failures;
      std::printf("FAIL pack/unpack tensor %zu (%zu bytes)\n", i, sizes[i]);
    }
  }
  cudaFree(base), cudaFree(packed), cudaFree(ddescs);
}

bool is_nan(const std::byte* at, DataType dtype) {
  std::uint16_t h = 0;
  switch (dtype) {
    case DataType::f32: { float f; std::memcpy(&f, at, 4); return f != f; }
    case DataType::f64: { double d; std::memcpy(&d, at, 8); return d != d; }
    case DataType::f16: std::memcpy(&h, at, 2); return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    case DataType::bf16: std::memcpy(&h, at, 2); return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    default: return false;
  }
}

// Every 16-bit pattern of f16/bf16 as `a`, against `partners` values of `b`
// (all special classes plus random patterns): sum and prod must give the
// host's bits (f32, rounded once) wherever the result is not NaN; min and
// max must return one operand's original bits, NaN winning. Exhaustive in
// `a`: about 4 M elements per (dtype, op).
void check_all_halves(DataType dtype, std::mt19937& rng) {
  std::vector<std::uint16_t> partners = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x3c00, 0xbc00, 0x7bff, 0x3f80,
                                         0xbf80, 0x7f7f, 0x0080, 0x7c00, 0xfc00, 0x7f80, 0xff80, 0x7e00, 0x7fc0};
  while (partners.size() < 64) partners.push_back(std::uint16_t(rng()));
  const std::size_t n = 65536 * partners.size();
  std::vector<std::uint16_t> a(n), b(n), want(n), got(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = std::uint16_t(i % 65536), b[i] = partners[i / 65536];
  std::uint16_t *da, *db, *dd;
  CUDA_OK(cudaMalloc(&da, n * 2));
  CUDA_OK(cudaMalloc(&db, n * 2));
  CUDA_OK(cudaMalloc(&dd, n * 2));
  CUDA_OK(cudaMemcpy(da, a.data(), n * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), n * 2, cudaMemcpyHostToDevice));
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    host::reduce_into(want.data(), a.data(), b.data(), n, dtype, op);
    cuda::reduce(dd, da, db, n, dtype, op, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(got.data(), dd, n * 2, cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto* g = reinterpret_cast<const std::byte*>(&got[i]);
      const auto* w = reinterpret_cast<const std::byte*>(&want[i]);
      const bool selects = op == ReduceOp::min || op == ReduceOp::max;
      const bool ok = selects ? (got[i] == a[i] || got[i] == b[i]) &&
                                    (got[i] == want[i] || (is_nan(g, dtype) && is_nan(w, dtype)))
                              : got[i] == want[i] || (is_nan(g, dtype) && is_nan(w, dtype));
      if (!ok && bad++ < 3)
        std::printf("FAIL %s %s: a=%04x b=%04x gpu=%04x host=%04x\n", std::string(to_string(dtype)).c_str(),
                    std::string(to_string(op)).c_str(), a[i], b[i], got[i], want[i]);
    }
    if (bad) ++failures;
  }
  cudaFree(da), cudaFree(db), cudaFree(dd);
}

// MEAN's divide over every class of value (signed zeros, subnormals, values
// at the edge of cuda::quotient's window, the largest, infinities, NaN):
// every f16/bf16 pattern, and f32/f64 random bit patterns mixed with
// values of every exponent, by divisors small, large and unrepresentable.
// The host's bits wherever the result is not NaN.
void check_divide_all_values(DataType dtype, std::mt19937& rng) {
  const std::size_t e = dtype_size(dtype), n = e == 2 ? 65536 : 1 << 18;
  std::vector<std::byte> data(n * e), want(n * e), got(n * e);
  std::mt19937_64 wide(rng());
  for (std::size_t i = 0; i < n; ++i) {
    std::byte* at = data.data() + i * e;
    if (e == 2) {
      const auto h = std::uint16_t(i);
      std::memcpy(at, &h, 2);
    } else if (e == 4) {
      // Half random patterns, half 1.x * 2^k over every exponent k.
      const std::uint32_t u = i % 2 ? std::uint32_t(wide()) : std::uint32_t((i / 2 % 256) << 23 | (wide() & 0x807fffffu));
      std::memcpy(at, &u, 4);
    } else {
      const std::uint64_t u = i % 2 ? wide() : ((i / 2 % 2048) << 52 | (wide() & 0x800fffffffffffffull));
      std::memcpy(at, &u, 8);
    }
  }
  std::byte* d;
  CUDA_OK(cudaMalloc(&d, n * e));
  for (std::size_t divisor : {std::size_t(1), std::size_t(3), std::size_t(7), std::size_t(8), std::size_t(24),
                              std::size_t(999983), (std::size_t(1) << 24) + 1, ~std::size_t(0)}) {
    want = data;
    host::divide_by(want.data(), n, dtype, divisor);
    CUDA_OK(cudaMemcpy(d, data.data(), n * e, cudaMemcpyHostToDevice));
    cuda::divide(d, n, dtype, divisor, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(got.data(), d, n * e, cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::byte *g = got.data() + i * e, *w = want.data() + i * e;
      if (std::memcmp(g, w, e) == 0 || (is_nan(g, dtype) && is_nan(w, dtype))) continue;
      if (bad++ < 3) {
        std::uint64_t x = 0, gx = 0, wx = 0;
        std::memcpy(&x, data.data() + i * e, e), std::memcpy(&gx, g, e), std::memcpy(&wx, w, e);
        std::printf("FAIL divide %s by %zu: x=%llx gpu=%llx host=%llx\n", std::string(to_string(dtype)).c_str(),
                    divisor, (unsigned long long)x, (unsigned long long)gx, (unsigned long long)wx);
      }
    }
    if (bad) ++failures;
  }
  cudaFree(d);
}

// min/max with NaN in f32/f64: NaN wins and the result is an operand's bits.
void check_nan_select(DataType dtype, std::mt19937& rng) {
  const std::size_t e = dtype_size(dtype), n = 4099;
  std::vector<std::byte> a(n * e), b(n * e), got(n * e), want(n * e);
  fill(a, dtype, rng);
  fill(b, dtype, rng);
  for (std::size_t i = 0; i < n; i += 3) {
    std::byte* at = (i % 2 ? a : b).data() + i * e;
    if (dtype == DataType::f32) { const float f = std::numeric_limits<float>::quiet_NaN(); std::memcpy(at, &f, 4); }
    else { const double d = std::numeric_limits<double>::quiet_NaN(); std::memcpy(at, &d, 8); }
  }
  std::byte *da, *db, *dd;
  CUDA_OK(cudaMalloc(&da, n * e));
  CUDA_OK(cudaMalloc(&db, n * e));
  CUDA_OK(cudaMalloc(&dd, n * e));
  CUDA_OK(cudaMemcpy(da, a.data(), n * e, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), n * e, cudaMemcpyHostToDevice));
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    host::reduce_into(want.data(), a.data(), b.data(), n, dtype, op);
    cuda::reduce(dd, da, db, n, dtype, op, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(got.data(), dd, n * e, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      if (std::memcmp(&got[i * e], &want[i * e], e) != 0 || (i % 3 == 0 && !is_nan(&got[i * e], dtype))) {
        ++failures;
        std::printf("FAIL NaN %s %s at %zu\n", std::string(to_string(dtype)).c_str(),
                    std::string(to_string(op)).c_str(), i);
        break;
      }
  }
  cudaFree(da), cudaFree(db), cudaFree(dd);
}

}  // namespace

int main() {
  gpu_test::skip_without_device("test_gpu_kernels");
  std::mt19937 rng(12345);
  const DataType dtypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                             DataType::u8,  DataType::i32, DataType::u32, DataType::i64,  DataType::u64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  for (DataType dtype : dtypes) {
    for (ReduceOp op : ops)
      for (std::size_t count : {std::size_t(1), std::size_t(7), std::size_t(33), std::size_t(1000), std::size_t(100003)})
        for (auto [d, a, b] : {std::tuple{0, 0, 0}, std::tuple{1, 1, 1}, std::tuple{0, 1, 2}, std::tuple{3, 3, 3}})
          check_reduce(dtype, op, count, std::size_t(d), std::size_t(a), std::size_t(b), rng);
    for (std::size_t divisor : {std::size_t(1), std::size_t(3), std::size_t(8), std::size_t(1000)})
      for (std::size_t offset : {std::size_t(0), std::size_t(1)}) check_divide(dtype, 10007, offset, divisor, rng);
  }
  check_all_halves(DataType::f16, rng);
  check_all_halves(DataType::bf16, rng);
  for (DataType dtype : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) check_divide_all_values(dtype, rng);
  check_nan_select(DataType::f32, rng);
  check_nan_select(DataType::f64, rng);
  check_pack(rng);
  std::printf("%s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
