// The host reduction kernels, one per instruction set this build has
// (x86-64: baseline SSE2, AVX2, AVX-512; elsewhere the baseline alone), and
// which one host::reduce_into and mean's host::divide_by run. Each kernel
// is the same loops (reduce_loops.hpp) vectorised for its instruction set,
// and all of them give the same bits for the same inputs, so ranks on
// different CPUs still agree bit for bit.
//
// Why wider kernels: a host reduce or all-reduce spends a large share of
// its time in these loops (2-rank reduce at 256 KiB on an Intel Xeon VM:
// 44% of the root's samples with the SSE2 loop), and the AVX-512 kernel
// took 14-16% off a 2-rank reduce at 16-256 KiB (docs/ALGORITHMS.md,
// "Reduction kernels per instruction set").
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "strata/types.hpp"

namespace strata::host::simd {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op);
using DivideFn = void (*)(void* data, std::size_t count, DataType dtype, std::size_t divisor);

struct Kernel {
  std::string_view name;  // "baseline", "avx2", "avx512": what STRATA_REDUCE_ISA takes
  ReduceFn reduce;        // host::reduce_into's contract (reduce_kernel.hpp)
  DivideFn divide;        // host::divide_by's contract (mean's finish)
};

// The kernels this build has that this CPU and its OS can run, the
// baseline first, wider ones after it.
std::span<const Kernel> usable();

// The kernel reduce_into runs, chosen once per process: the one
// STRATA_REDUCE_ISA names, else the widest usable one (also when it names
// one this build lacks or this CPU cannot run: see unheeded()).
const Kernel& chosen();

// Which copy to run, for a file that keeps its own loops per instruction
// set beside these kernels (the integrity check's, the fixed-point and
// f32-accumulation conversions): `isa`'s ("baseline", "avx2", "avx512")
// where this build has it and this CPU runs it (usable()), else the
// baseline; chosen_copy() is the one chosen() runs.
enum class Copy { baseline, avx2, avx512 };
Copy copy_for(std::string_view isa);
Copy chosen_copy();

// Why STRATA_REDUCE_ISA was not followed, for the caller to report (a
// communicator warns once per process); empty when it was, or is unset.
const std::string& unheeded();

}  // namespace strata::host::simd
