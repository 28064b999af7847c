// Reproducible results on CUDA tensors (docs/REPRODUCIBILITY.md).
// `order`: every spec (NCCL, psgpu, host algorithms through pinned copies,
// auto) gives the bits of the canonical fold, element by element in rank
// order, which this test computes on the host from every rank's
// contribution; the same bits as host memory gives. f32 and f64 sums,
// means, min and max, blocking and on a stream.
// `exact`, and 16-bit sums accumulated in f32 (which run through host
// memory on CUDA tensors): f32 and bf16 sums of values whose sum every
// order computes exactly in f32, so the reference is that sum rounded once
// to the dtype; under `exact` the same bits for every rotation of which
// rank holds which contribution and with the last rank contributing zeros;
// blocking, on a stream, as a request and as a batch of several tensors.
// Exits 77 without a CUDA device.
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

// Contributor c's value for element i where every sum must be exact: at
// most 8 significant bits (a bf16 holds it), magnitudes 2^-5..2^4 in steps
// of at least 2^-12, so any sum of up to 2^6 of them is exact in f32
// whatever its order.
float small_contribution(int c, std::size_t i) {
  int exponent = 0;
  const double fraction = std::frexp(contribution(c, i), &exponent);  // |fraction| in [0.5, 1)
  return static_cast<float>(std::ldexp(std::round(std::ldexp(fraction, 8)), exponent % 5 - 8));
}

// f32 to bf16, rounding to nearest even (the values here are finite).
std::uint16_t to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// The elements of `dtype` (f32 or bf16) that `values` round to, as bytes.
std::vector<unsigned char> encoded(const std::vector<float>& values, DataType dtype) {
  std::vector<unsigned char> bytes(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::bf16) {
      const std::uint16_t h = to_bf16(values[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    } else {
      std::memcpy(&bytes[i * 4], &values[i], 4);
    }
  }
  return bytes;
}

// A sum of small contributions through `comm` on CUDA memory: this rank
// holds contributor (rank + rotation) mod size's values, or zeros where it
// is the last rank and `last_gives_zeros`; the result must be the exact sum
// of what the ranks hold, rounded once to the dtype.
// How check_exact_sum makes its call.
enum class Form { blocking, on_stream, request };

void check_exact_sum(Communicator& comm, const std::string& what, DataType dtype, std::size_t count, int rotation,
                     bool last_gives_zeros, Form form = Form::blocking, cudaStream_t stream = nullptr) {
  const auto held = [&](int r, std::size_t i) {
    return last_gives_zeros && r == size - 1 ? 0.0f : small_contribution((r + rotation) % size, i);
  };
  std::vector<float> mine(count), sum(count, 0.0f);
  for (std::size_t i = 0; i < count; ++i) {
    mine[i] = held(rank, i);
    double exact = 0;
    for (int r = 0; r < size; ++r) exact += held(r, i);
    sum[i] = static_cast<float>(exact);
  }
  const std::vector<unsigned char> input = encoded(mine, dtype), want = encoded(sum, dtype);
  void* device = nullptr;
  cudaMalloc(&device, input.size());
  cudaMemcpy(device, input.data(), input.size(), cudaMemcpyHostToDevice);
  std::string wrong;
  try {
    const Tensor t{device, count, dtype, Memory::cuda, -1};
    CommunicationOptions options;
    options.stream = form == Form::on_stream ? stream : nullptr;
    if (form == Form::request)
      comm.iall_reduce(t, t, ReduceOp::sum, options).wait();
    else
      comm.all_reduce(t, t, ReduceOp::sum, options);
    if (options.stream) cudaStreamSynchronize(stream);
    std::vector<unsigned char> got(input.size());
    cudaMemcpy(got.data(), device, got.size(), cudaMemcpyDeviceToHost);
    if (got != want) wrong = "not the exact sum rounded once";
  } catch (const Error& e) {
    wrong = e.what();
  }
  rank_check(wrong.empty(), what + " " + std::string(to_string(dtype)) + " sum x" + std::to_string(count) +
                                ", rotation " + std::to_string(rotation) + (last_gives_zeros ? ", last rank zeros" : "") +
                                (form == Form::on_stream ? ", on a stream"
                                 : form == Form::request ? ", a request"
                                                         : "") +
                                ": " + wrong);
  cudaFree(device);
}

// A batch of small contributions on CUDA memory (tensors of several sizes
// and dtypes, packed together): each tensor must hold the exact sum of what
// the ranks gave, rounded once, for the rotation as check_exact_sum says.
void check_exact_batch(Communicator& comm, const std::string& what, int rotation) {
  struct Case {
    std::size_t count;
    DataType dtype;
  };
  const std::vector<Case> cases = {{3, DataType::f32}, {40000, DataType::bf16}, {1000, DataType::f32}};
  std::vector<Tensor> tensors;
  std::vector<std::vector<unsigned char>> want;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    std::vector<float> mine(cases[k].count), sum(cases[k].count);
    for (std::size_t i = 0; i < cases[k].count; ++i) {
      // Each tensor its own values: element i of tensor k is element
      // i + k * 100000 of the contributions.
      const std::size_t at = i + k * 100000;
      mine[i] = small_contribution((rank + rotation) % size, at);
      double exact = 0;
      for (int r = 0; r < size; ++r) exact += small_contribution((r + rotation) % size, at);
      sum[i] = static_cast<float>(exact);
    }
    const std::vector<unsigned char> input = encoded(mine, cases[k].dtype);
    want.push_back(encoded(sum, cases[k].dtype));
    void* device = nullptr;
    cudaMalloc(&device, input.size());
    cudaMemcpy(device, input.data(), input.size(), cudaMemcpyHostToDevice);
    tensors.push_back({device, cases[k].count, cases[k].dtype, Memory::cuda, -1});
  }
  std::string wrong;
  const auto tensors_wrong = [&] {
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      std::vector<unsigned char> got(want[k].size());
      cudaMemcpy(got.data(), tensors[k].data, got.size(), cudaMemcpyDeviceToHost);
      if (got != want[k]) return "tensor " + std::to_string(k) + " is not the exact sum rounded once";
    }
    return std::string();
  };
  try {
    // The last pack's on_pack_done promises every result in its tensor.
    const std::size_t packs = comm.plan_for(tensors).packs.size();
    std::size_t done = 0;
    std::string at_last_pack = "on_pack_done never fired for the last pack";
    comm.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{}, {}, [&](std::size_t p) {
      ++done;
      if (p + 1 == packs) at_last_pack = tensors_wrong();
    });
    wrong = done != packs ? "on_pack_done fired " + std::to_string(done) + " times for " + std::to_string(packs) +
                                " packs"
            : !at_last_pack.empty() ? "at the last on_pack_done: " + at_last_pack
                                    : tensors_wrong();
  } catch (const Error& e) {
    wrong = e.what();
  }
  rank_check(wrong.empty(), what + " batch, rotation " + std::to_string(rotation) + ": " + wrong);
  for (const Tensor& t : tensors) cudaFree(t.data);
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
  }
  // Through host memory every spec takes the same path: auto, the first
  // GPU algorithm and the first host algorithm.
  for (const std::string spec : {std::string("auto"), gpu_test::algorithms_on(Memory::cuda).front().name,
                                 gpu_test::algorithms_on(Memory::host).front().name}) {
    Config exact;
    exact.all_reduce_spec = spec;
    exact.reproducible = "exact";
    Communicator comm(MPI_COMM_WORLD, exact);
    for (const DataType dtype : {DataType::f32, DataType::bf16})
      for (const std::size_t count : {std::size_t{3}, std::size_t{40000}}) {
        for (int rotation = 0; rotation < size; ++rotation)
          check_exact_sum(comm, "exact, " + spec, dtype, count, rotation, false);
        if (size > 1) check_exact_sum(comm, "exact, " + spec, dtype, count, 0, true);
      }
    check_exact_sum(comm, "exact, " + spec, DataType::f32, 40000, size - 1, false, Form::on_stream, stream);
    check_exact_sum(comm, "exact, " + spec, DataType::bf16, 40000, size - 1, false, Form::request);
    for (int rotation = 0; rotation < size; ++rotation) check_exact_batch(comm, "exact, " + spec, rotation);
    Config wide;
    wide.all_reduce_spec = spec;
    wide.accumulate_f32 = true;
    Communicator widening(MPI_COMM_WORLD, wide);
    check_exact_sum(widening, "accumulate_f32, " + spec, DataType::bf16, 40000, 0, false);
    check_exact_batch(widening, "accumulate_f32, " + spec, 0);
  }
  cudaStreamDestroy(stream);
  return gpu_test::end_program();
}
