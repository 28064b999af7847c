// strata's kernels, run on the host. nvcc registers every kernel of a
// program or library with the runtime when it loads (__cudaRegisterFunction
// gives the host stub's address and the kernel's mangled name); the double
// reads the demangled name to know what the kernel computes and how its
// arguments are laid out:
//   reduce_kernel<NativeOps<T, op> | HalfOps<__half2 | __nv_bfloat162, op>>(dst, a, b, head, vectors, count)
//   divide_kernel<NativeCodec<T> | F16Codec | BF16Codec>(data, head, vectors, count, divisor)
//   pack_kernel<true | false>(packed, descs, n)   (pack / unpack)
//   strata::cuda::gate_kernel(flag, target)      (waits for a word the host writes)
//   strata::bench::busy_kernel(nanoseconds)      (compute that takes that long)
// A launch is checked as a GPU would fault: the stream on the current
// device, every pointer device memory of that device and long enough, the
// 16-byte vector body aligned; the arithmetic is elementwise.hpp's. Any
// other kernel is refused (cudaErrorInvalidDeviceFunction): the double
// cannot run what it does not know.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "strata/types.hpp"

namespace gpu_double {

enum class Family { unknown, reduce, divide, pack, unpack, gate, busy };

struct Kernel {
  std::string name;  // demangled
  Family family = Family::unknown;
  strata::DataType dtype = strata::DataType::f32;
  strata::ReduceOp op = strata::ReduceOp::sum;
};

void register_kernel(const void* host_function, const char* device_name);
// The kernel whose host stub is `host_function`, or nullptr.
const Kernel* kernel_of(const void* host_function);

cudaError_t launch(const char* call, const Kernel& kernel, dim3 grid, dim3 block, void** args, std::size_t shared,
                   cudaStream_t stream);

}  // namespace gpu_double
