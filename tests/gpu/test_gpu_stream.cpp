// Ordering after the producer of the data (CommunicationOptions::stream)
// and the caller's current device, through the public API on CUDA tensors.
// The producer stream is held back 200 ms by a host function
// (cudaLaunchHostFunc) before it uploads the input, and strata is called at
// once, without synchronising: a call that does not wait for the producer
// reads the old contents (zeros) and fails. The single-tensor cases run out
// of place, so that they can fail at one rank too (in place, one rank's
// all_reduce has nothing to do). Cases:
//   - default (stream = nullptr): the producer is the legacy default stream
//     (where cudaMemcpy and PyTorch's default stream put their work);
//   - default, the producer a blocking stream of the caller's: the legacy
//     default stream waits for it implicitly, and strata for that;
//   - stream = a non-blocking stream of the caller's (the call is then
//     stream-ordered: the result is read after synchronising that stream);
//   - the same for a batch (batch_all_reduce, in place: packing copies);
//   - with two or more devices, the caller's current device is another
//     one and must be current again after the call (with one device this
//     cannot be observed, and is reported).
// Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;

namespace {

int rank = 0, size = 1;
constexpr std::size_t kCount = 1 << 22;  // 16 MiB of f32

// The producer's slow work, not a wait for an event: strata must order its
// reads after it, which no event can stand in for (strata, correctly
// ordered, cannot start before the stream passes this point; wrongly
// ordered, it would read the old data meanwhile). Nothing asserts a time.
void CUDART_CB hold_back(void*) { usleep(200 * 1000); }

// Enqueues on `stream`: 200 ms of nothing, then the upload of rank + 1.
void produce(float* device, float* pinned, cudaStream_t stream) {
  for (std::size_t i = 0; i < kCount; ++i) pinned[i] = float(rank + 1);
  cudaLaunchHostFunc(stream, hold_back, nullptr);
  cudaMemcpyAsync(device, pinned, kCount * sizeof(float), cudaMemcpyHostToDevice, stream);
}

// `device` holds the sum over ranks of rank + 1, everywhere.
bool holds_sum(const float* device) {
  std::vector<float> got(kCount);
  cudaMemcpy(got.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost);
  const float want = float(size * (size + 1) / 2);
  for (float v : got)
    if (v != want) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_stream");
  rank = start.rank;
  size = start.size;
  {
    const int device = gpu_test::use_rank_device();
    Communicator comm(MPI_COMM_WORLD);
    float *d = nullptr, *result = nullptr, *pinned = nullptr;
    cudaMalloc(&d, kCount * sizeof(float));
    cudaMalloc(&result, kCount * sizeof(float));
    cudaMallocHost(&pinned, kCount * sizeof(float));
    const Tensor t{d, kCount, DataType::f32, Memory::cuda, device};
    const Tensor out{result, kCount, DataType::f32, Memory::cuda, device};
    const auto clear = [&] {
      cudaMemset(d, 0, kCount * sizeof(float));
      cudaMemset(result, 0, kCount * sizeof(float));
      cudaDeviceSynchronize();
    };

    // 1. The legacy default stream, by default.
    clear();
    produce(d, pinned, cudaStreamLegacy);
    comm.all_reduce(t, out, ReduceOp::sum, {.timeout_seconds = 120});
    every_rank_check(holds_sum(result), "all_reduce waits for the legacy default stream by default");

    // 1b. A blocking stream of the caller's, by default: through the legacy
    // default stream's implicit wait for it.
    cudaStream_t blocking = nullptr;
    cudaStreamCreate(&blocking);
    clear();
    produce(d, pinned, blocking);
    comm.all_reduce(t, out, ReduceOp::sum, {.timeout_seconds = 120});
    every_rank_check(holds_sum(result), "all_reduce waits for a blocking stream by default (legacy stream semantics)");
    cudaStreamDestroy(blocking);

    // 2. The caller's own non-blocking stream, named in the options.
    cudaStream_t mine = nullptr;
    cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
    clear();
    produce(d, pinned, mine);
    CommunicationOptions options;
    options.timeout_seconds = 120;
    options.stream = static_cast<StreamHandle>(mine);
    comm.all_reduce(t, out, ReduceOp::sum, options);
    // Stream-ordered: the result is on `mine` after the call's work.
    cudaStreamSynchronize(mine);
    every_rank_check(holds_sum(result), "all_reduce waits for CommunicationOptions::stream");

    // 3. A batch on the caller's stream (two tensors: one pack by default).
    clear();
    produce(d, pinned, mine);
    std::vector<Tensor> halves = {{d, kCount / 2, DataType::f32, Memory::cuda, device},
                                  {d + kCount / 2, kCount / 2, DataType::f32, Memory::cuda, device}};
    comm.batch_all_reduce(halves, ReduceOp::sum, options);
    cudaStreamSynchronize(mine);
    every_rank_check(holds_sum(d), "batch_all_reduce waits for CommunicationOptions::stream");
    cudaStreamDestroy(mine);

    // 4. The caller's current device survives the call.
    int count = 0;
    cudaGetDeviceCount(&count);
    if (count >= 2) {
      const int other = (device + 1) % count;
      cudaSetDevice(other);
      comm.all_reduce(t, t, ReduceOp::sum, {.timeout_seconds = 120});
      int current = -1;
      cudaGetDevice(&current);
      every_rank_check(current == other, "the caller's current device is current again after the call");
      cudaSetDevice(device);
    } else if (rank == 0) {
      std::printf("note: one CUDA device, so restoring the caller's current device cannot be observed here\n");
    }
    cudaFree(d);
    cudaFree(result);
    cudaFreeHost(pinned);
  }
  return gpu_test::end_program();
}
