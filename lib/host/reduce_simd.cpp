#include "host/reduce_simd.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "host/reduce_loops.hpp"

namespace strata::host::simd {
namespace {

void reduce_baseline(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op) {
  loops::reduce_any(dst, a, b, count, dtype, op);
}
void divide_baseline(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
  loops::divide_any(data, count, dtype, divisor);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STRATA_REDUCE_X86 1

// No fma in either target: the loops have no multiply-add to fuse, and a
// fused one would round differently from the baseline's.
__attribute__((target("avx2"))) void reduce_avx2(void* dst, const void* a, const void* b, std::size_t count,
                                                 DataType dtype, ReduceOp op) {
  loops::reduce_any(dst, a, b, count, dtype, op);
}
__attribute__((target("avx2"))) void divide_avx2(void* data, std::size_t count, DataType dtype,
                                                 std::size_t divisor) {
  loops::divide_any(data, count, dtype, divisor);
}

__attribute__((target("avx2,avx512f,avx512bw,avx512vl"))) void reduce_avx512(void* dst, const void* a, const void* b,
                                                                             std::size_t count, DataType dtype,
                                                                             ReduceOp op) {
  loops::reduce_any(dst, a, b, count, dtype, op);
}
__attribute__((target("avx2,avx512f,avx512bw,avx512vl"))) void divide_avx512(void* data, std::size_t count,
                                                                             DataType dtype, std::size_t divisor) {
  loops::divide_any(data, count, dtype, divisor);
}
#endif

std::vector<Kernel> find_usable() {
  std::vector<Kernel> found{{"baseline", &reduce_baseline, &divide_baseline}};
#ifdef STRATA_REDUCE_X86
  __builtin_cpu_init();  // (may run before the constructors that would call it)
  // __builtin_cpu_supports also asks whether the OS saves the wider
  // registers (XCR0), not only whether the CPU has them.
  if (__builtin_cpu_supports("avx2")) found.push_back({"avx2", &reduce_avx2, &divide_avx2});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    found.push_back({"avx512", &reduce_avx512, &divide_avx512});
#endif
  return found;
}

// The kernel chosen, and why STRATA_REDUCE_ISA was not followed (empty
// when it was, or is unset).
struct Choice {
  const Kernel* kernel;
  std::string unheeded;
};

// The kernel for STRATA_REDUCE_ISA, or the widest when it is unset or
// names none of `kernels`.
Choice choose(std::span<const Kernel> kernels) {
  const char* env = std::getenv("STRATA_REDUCE_ISA");
  if (!env || !*env) return {&kernels.back(), {}};
  for (const Kernel& k : kernels)
    if (k.name == env) return {&k, {}};
  std::string names;
  for (const Kernel& k : kernels) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return {&kernels.back(), "STRATA_REDUCE_ISA='" + std::string(env) + "' is not a kernel this build and CPU can run (" +
                               names + "): " + std::string(kernels.back().name) + " instead"};
}

}  // namespace

std::span<const Kernel> usable() {
  static const std::vector<Kernel> kernels = find_usable();
  return kernels;
}

namespace {

const Choice& choice() {
  static const Choice made = choose(usable());
  return made;
}

}  // namespace

const Kernel& chosen() { return *choice().kernel; }

Copy copy_for(std::string_view isa) {
  for (const Kernel& kernel : usable())
    if (kernel.name == isa) return isa == "avx512" ? Copy::avx512 : isa == "avx2" ? Copy::avx2 : Copy::baseline;
  return Copy::baseline;
}

Copy chosen_copy() { return copy_for(chosen().name); }

const std::string& unheeded() { return choice().unheeded; }

}  // namespace strata::host::simd
