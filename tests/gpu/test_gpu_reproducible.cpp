// Reproducible mode `order` on CUDA tensors (docs/REPRODUCIBILITY.md):
// every spec (NCCL, psgpu, host algorithms through pinned copies, auto)
// gives the bits of the canonical fold, element by element in rank order,
// which this test computes on the host from every rank's contribution; the
// same bits as host memory gives. f32 and f64 sums, means, min and max,
// blocking and on a stream. What the mode does not do on CUDA tensors yet
// (exact sums, the f32 accumulation of 16-bit types) raises Unavailable on
// every rank, and the communicator goes on. Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_specs.hpp"
#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::rank_check;

namespace {

int rank = 0, size = 1;

// Contributor c's value for element i: mixed signs, magnitudes over 2^24,
// so that sums depend on their order.
double contribution(int c, std::size_t i) {
  std::uint64_t h = (static_cast<std::uint64_t>(c) * 0x9e3779b97f4a7c15ULL) ^ (i * 0xc4ceb9fe1a85ec53ULL);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  const double mantissa = 1.0 + static_cast<double>(h & 0xfffff) / 1048576.0;
  return ((h >> 20) & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, static_cast<int>((h >> 24) % 24) - 12);
}

template <typename T>
std::vector<T> data_of(int c, std::size_t count) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(contribution(c, i));
  return v;
}

// The canonical fold over ranks 0..size-1 (a mean divides at the end).
template <typename T>
std::vector<T> canonical(std::size_t count, ReduceOp op) {
  std::vector<T> acc = data_of<T>(0, count);
  for (int c = 1; c < size; ++c) {
    const std::vector<T> x = data_of<T>(c, count);
    for (std::size_t i = 0; i < count; ++i)
      acc[i] = op == ReduceOp::min ? (x[i] < acc[i] ? x[i] : acc[i])
               : op == ReduceOp::max ? (x[i] > acc[i] ? x[i] : acc[i])
                                     : acc[i] + x[i];
  }
  if (op == ReduceOp::mean)
    for (T& a : acc) a /= static_cast<T>(size);
  return acc;
}

template <typename T>
void check_order(Communicator& comm, const std::string& spec, DataType dtype, ReduceOp op, std::size_t count,
                 cudaStream_t stream) {
  const std::vector<T> mine = data_of<T>(rank, count);
  void* device = nullptr;
  cudaMalloc(&device, count * sizeof(T));
  cudaMemcpy(device, mine.data(), count * sizeof(T), cudaMemcpyHostToDevice);
  CommunicationOptions options;
  options.stream = stream;
  const std::string what = spec + " " + std::string(to_string(dtype)) + " " + std::string(to_string(op)) + " x" +
                           std::to_string(count) + (stream ? " on a stream" : "");
  std::string wrong;
  try {
    Tensor t{device, count, dtype, Memory::cuda, -1};
    comm.all_reduce(t, t, op, options);
    if (stream) cudaStreamSynchronize(stream);
    std::vector<T> got(count);
    cudaMemcpy(got.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost);
    const std::vector<T> want = canonical<T>(count, op);
    for (std::size_t i = 0; i < count; ++i)
      if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
        wrong = "element " + std::to_string(i) + " = " + std::to_string(got[i]) + ", want " + std::to_string(want[i]);
        break;
      }
  } catch (const Error& e) {
    wrong = e.what();
  }
  rank_check(wrong.empty(), what + ": " + wrong);
  cudaFree(device);
}

// A call the mode cannot run on CUDA tensors yet: Unavailable, naming the mode.
void check_refused(Communicator& comm, DataType dtype, const std::string& mode_word) {
  void* device = nullptr;
  const std::size_t count = 1000;
  cudaMalloc(&device, count * 4);
  cudaMemset(device, 0, count * 4);
  std::string message;
  try {
    comm.all_reduce({device, count, dtype, Memory::cuda, -1}, {device, count, dtype, Memory::cuda, -1}, ReduceOp::sum);
  } catch (const Unavailable& e) {
    message = e.what();
  } catch (const Error& e) {
    message = std::string("not Unavailable: ") + e.what();
  }
  rank_check(message.find(mode_word) != std::string::npos,
             std::string(to_string(dtype)) + " sum: want Unavailable naming '" + mode_word + "', got '" + message + "'");
  cudaFree(device);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_reproducible", MPI_THREAD_MULTIPLE);
  rank = start.rank;
  size = start.size;
  cudaStream_t stream = nullptr;
  for (const std::string& spec : gpu_test::gpu_specs()) {
    Config config;
    config.all_reduce_spec = spec;
    config.reproducible = "order";
    Communicator comm(MPI_COMM_WORLD, config);
    if (!stream) {
      cudaSetDevice(comm.topology().ranks[static_cast<std::size_t>(rank)].gpu.cuda_device);  // the rank's device
      cudaStreamCreate(&stream);
    }
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max})
      for (const std::size_t count : {std::size_t{3}, std::size_t{40000}}) {
        check_order<float>(comm, spec, DataType::f32, op, count, nullptr);
        check_order<double>(comm, spec, DataType::f64, op, count, nullptr);
      }
    check_order<float>(comm, spec, DataType::f32, ReduceOp::sum, 40000, stream);
    check_refused(comm, DataType::bf16, "16-bit");
    check_order<float>(comm, spec, DataType::f32, ReduceOp::sum, 1000, nullptr);  // usable after the refusal
  }
  {
    Config config;
    config.reproducible = "exact";
    Communicator comm(MPI_COMM_WORLD, config);
    check_refused(comm, DataType::f32, "exact");
  }
  cudaStreamDestroy(stream);
  return gpu_test::end_program();
}
