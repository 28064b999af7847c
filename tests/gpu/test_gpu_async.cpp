// What happens after a stream-ordered call returned, and CUDA requests:
//   - a failure found after the call returned (an asynchronous NCCL error,
//     a rank's operation that never completes) breaks the communicator:
//     the stream is let go (NCCL aborted), Communicator::check() raises the
//     typed error once (BackendError where NCCL failed, DeadlineExceeded
//     naming exactly the ranks that did not arrive elsewhere), then
//     PeerFailure, and so does the next call;
//   - a CUDA request progresses by itself: its start returns before its
//     producer ran, it orders after the producer as it was at the start
//     (not at wait()), and wait() returns with the result in place;
//   - the defects a review found: a tensor on another device than the
//     rank's is refused before the call check (InvalidArgument here,
//     Mismatch on the peers, nobody waiting for a timeout); the caller's
//     pending CUDA error survives a call; two communicators driving NCCL
//     on one GPU from two threads (the double reports NCCL calls on one
//     device from two threads at once).
// --stop-rank R --timeout T: the lent GPU's abort check instead: rank R
// stops itself (SIGSTOP) mid-run; every other rank's next stream-ordered
// call raises DeadlineExceeded naming R; prints "ABORT: ..." and exits 0
// when that held. Needs the test double's faults for the first cases
// (strata_double_set_faults, found with dlsym); on a real GPU those are
// skipped. Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "stream_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;
using namespace strata::stream_test;

namespace {

constexpr std::size_t kCount = 1000;
using SetFaults = void (*)(const char*);
SetFaults set_faults = nullptr;
int skipped = 0;

struct Outcome {
  std::string type = "none";
  std::string text;
  std::vector<int> named;
};

Outcome outcome(const std::function<void()>& call) {
  Outcome got;
  try {
    call();
  } catch (const DeadlineExceeded& e) {
    got = {"DeadlineExceeded", e.what(), e.waiting_for()};
  } catch (const BackendError& e) {
    got = {"BackendError", e.what(), {}};
  } catch (const PeerFailure& e) {
    got = {"PeerFailure", e.what(), {}};
  } catch (const Mismatch& e) {
    got = {"Mismatch", e.what(), {}};
  } catch (const InvalidArgument& e) {
    got = {"InvalidArgument", e.what(), {}};
  } catch (const std::exception& e) {
    got = {"other", e.what(), {}};
  }
  return got;
}

std::string shown(const Outcome& got) { return got.type + ": " + got.text; }

CommunicationOptions on(cudaStream_t stream, double timeout) {
  CommunicationOptions options;
  options.timeout_seconds = timeout;
  options.stream = static_cast<StreamHandle>(stream);
  return options;
}

// A stream-ordered call whose work fails after it returned (the fault
// armed for it): the stream is let go, then check() raises the typed error
// once, then PeerFailure, as does the next call.
void failure_after_return(int gpu, cudaStream_t stream, const char* faults, const std::string& what,
                          const std::function<bool(const Outcome&)>& expected) {
  if (!set_faults) {
    if (rank == 0) std::printf("skipped: %s: needs the CUDA test double's faults\n", what.c_str());
    ++skipped;
    return;
  }
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
  DeviceFloats data(kCount);
  data.upload(stream, [](std::size_t i) { return contribution(rank, i); });
  comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, on(stream, 3));  // the warm-up
  cudaStreamSynchronize(stream);
  set_faults(faults);
  const Outcome call = outcome([&] { comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, on(stream, 3)); });
  every_rank_check(call.type == "none", what + ": the stream-ordered call returned (" + shown(call) + ")");
  // Let go by the abort, or done: the stream ends either way.
  cudaStreamSynchronize(stream);
  cudaGetLastError();
  // The watcher finds the failure within its interval after the deadline;
  // check() looks as well. Poll until it raises (bounded by the watcher's
  // own deadline, 3 s, and the ranks' roll call).
  Outcome first;
  for (int i = 0; i < 20000 && first.type == "none"; ++i) {
    first = outcome([&] { comm.check(); });
    if (first.type == "none") std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  set_faults("");
  every_rank_check(expected(first), what + ": check() raises the typed error (" + shown(first) + ")");
  const Outcome second = outcome([&] { comm.check(); });
  every_rank_check(second.type == "PeerFailure", what + ": then check() raises PeerFailure (" + shown(second) + ")");
  const Outcome next = outcome([&] { comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, on(stream, 3)); });
  every_rank_check(next.type == "PeerFailure", what + ": and so does the next call (" + shown(next) + ")");
  MPI_Barrier(MPI_COMM_WORLD);
}

void failures_after_return(int gpu, cudaStream_t stream) {
  failure_after_return(gpu, stream, "nccl-error@1", "an asynchronous NCCL error on rank 1",
                       [](const Outcome& got) {
                         return rank == 1 ? got.type == "BackendError" && got.text.find("NCCL") != std::string::npos
                                          : got.type == "DeadlineExceeded" && got.named == std::vector<int>{1};
                       });
  failure_after_return(gpu, stream, "nccl-hang@1", "rank 1's NCCL operation never completing",
                       [](const Outcome& got) { return got.type == "DeadlineExceeded" && got.named.empty(); });
}

// A CUDA request: its start returns before its producer ran; it orders after
// the producer as it was at the start; wait() gives the result.
void request_progresses(int gpu, cudaStream_t producer, cudaStream_t other) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
  DeviceFloats in(kCount), out(kCount);
  comm.all_reduce(in.tensor(gpu), out.tensor(gpu), ReduceOp::sum, on(producer, 60));  // the warm-up
  cudaStreamSynchronize(producer);
  Latch before, after;
  before.hold(producer);
  in.upload(producer, [](std::size_t i) { return contribution(rank, i); });
  Request request = comm.iall_reduce(in.tensor(gpu), out.tensor(gpu), ReduceOp::sum, on(producer, 60));
  // Work the producer gets after the start: the request must not wait for it.
  after.hold(producer);
  const bool early = !request.test();  // its producer has not run yet
  before.open_from(other);
  const Outcome waited = outcome([&] { request.wait(); });
  after.open();
  out.download(cudaStreamLegacy);
  cudaStreamSynchronize(producer);
  cudaStreamSynchronize(cudaStreamLegacy);
  every_rank_check(!before.gave_up(), "a CUDA request's start returns before its producer ran");
  every_rank_check(early, "... and test() is false while its work cannot have run");
  every_rank_check(waited.type == "none" && !after.gave_up(),
          "... it orders after its producer as it was at the start, not at wait() (" + shown(waited) + ")");
  std::string first;
  const bool summed = same_bits(out.pinned, kCount, [](std::size_t i) { return reference(i, size); }, &first);
  every_rank_check(summed, "... and wait() returns with the sum in place" + (first.empty() ? "" : " (" + first + ")"));
}

// A tensor on another device than the rank's: refused before the call
// check, so the others raise Mismatch at once (their timeout is 60 s).
void wrong_device(int gpu) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < 2 || size < 2) {
    if (rank == 0) std::printf("skipped: the wrong-device case needs 2 devices per process and 2 ranks\n");
    ++skipped;
    return;
  }
  Communicator comm(MPI_COMM_WORLD);
  const int elsewhere = (gpu + 1) % count;
  cudaSetDevice(rank == 0 ? elsewhere : gpu);
  DeviceFloats data(kCount);
  cudaSetDevice(gpu);
  const Tensor t = data.tensor(rank == 0 ? elsewhere : gpu);
  const auto started = std::chrono::steady_clock::now();
  const Outcome got = outcome([&] { comm.all_reduce(t, t, ReduceOp::sum, {.timeout_seconds = 60}); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  every_rank_check(rank == 0 ? got.type == "InvalidArgument" && got.text.find(".device") != std::string::npos
                    : got.type == "Mismatch",
          "a tensor on another device than rank 0's: InvalidArgument there, Mismatch on the others (" + shown(got) +
              ")");
  if (rank == 0) std::printf("note: the refusal took %.2f s (the timeout was 60 s)\n", seconds);
}

// The caller's pending CUDA error is still there after a call that
// launched strata's kernels (mean: the divide kernel).
void pending_error_kept(int gpu) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
  DeviceFloats data(kCount);
  cudaMemset(data.device, 0, kCount * sizeof(float));
  comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::mean, {.timeout_seconds = 60});
  void* huge = nullptr;
  cudaMalloc(&huge, std::size_t(1) << 60);  // fails: the thread's last error is now cudaErrorMemoryAllocation
  const cudaError_t before = cudaPeekAtLastError();
  comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::mean, {.timeout_seconds = 60});
  const cudaError_t pending = cudaGetLastError();
  every_rank_check(before == cudaErrorMemoryAllocation && pending == cudaErrorMemoryAllocation,
          std::string("the caller's pending CUDA error survives a call (before: ") + cudaGetErrorName(before) +
              ", after: " + cudaGetErrorName(pending) + ")");
}

// Two communicators over the same ranks, each driven by its own thread, on
// the one GPU each rank drives.
void two_threads(int gpu, bool any_thread) {
  if (!any_thread) {
    if (rank == 0) std::printf("skipped: two communicators on two threads need MPI_THREAD_MULTIPLE\n");
    ++skipped;
    return;
  }
  Communicator a(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
  Communicator b(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
  DeviceFloats da(kCount), db(kCount);
  std::string errors[2];
  const auto drive = [&](Communicator& comm, DeviceFloats& data, std::string& error) {
    cudaSetDevice(gpu);
    try {
      for (int i = 0; i < 30; ++i)
        comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, {.timeout_seconds = 60});
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  std::thread one([&] { drive(a, da, errors[0]); });
  std::thread two([&] { drive(b, db, errors[1]); });
  one.join();
  two.join();
  every_rank_check(errors[0].empty() && errors[1].empty(),
          "two communicators driving NCCL on one GPU from two threads (" + errors[0] + errors[1] + ")");
}

// --stop-rank: rank `stopped` stops itself after a few calls; the others'
// next call must name it.
int stop_rank(int gpu, int stopped, double timeout) {
  std::vector<int> pids(static_cast<std::size_t>(size));
  const int mine = int(getpid());
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  int ok = 1;
  {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
    DeviceFloats data(1 << 16);
    for (int i = 0; i < 5; ++i) comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, on(stream, timeout));
    cudaStreamSynchronize(stream);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == stopped) raise(SIGSTOP);  // mid-run, without a word
    const auto started = std::chrono::steady_clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    // With the call check the call itself finds the stopped rank; without
    // it the call returns and the communicator finds it later (check()).
    Outcome got = outcome([&] { comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, on(stream, timeout)); });
    // (The stopped rank, let go later, only finishes: what its last call
    // meets depends on how far the others got before they gave up.)
    while (rank != stopped && got.type == "none" && elapsed() < 10 * timeout + 30) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      got = outcome([&] { comm.check(); });
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (rank != stopped) {
      const bool named = got.type == "DeadlineExceeded" && got.named == std::vector<int>{stopped};
      std::printf("ABORT: rank %d: %s naming rank(s)", rank, got.type.c_str());
      for (int r : got.named) std::printf(" %d", r);
      std::printf(" after %.1f s (timeout %.1f s): %s\n", seconds, timeout, named ? "as expected" : "NOT as expected");
      std::fflush(stdout);
      ok = named;
      if (rank == (stopped == 0 ? 1 : 0)) kill(pids[std::size_t(stopped)], SIGCONT);  // let it finish too
    } else {
      std::printf("ABORT: rank %d (stopped, then let go): its next call: %s\n", rank, got.type.c_str());
      std::fflush(stdout);
    }
    cudaStreamSynchronize(stream);
  }
  cudaStreamDestroy(stream);
  int all = ok;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_async", MPI_THREAD_MULTIPLE);
  rank = start.rank;
  size = start.size;
  const int gpu = gpu_test::use_rank_device();
  int stopped = -1;
  double timeout = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--stop-rank") == 0) stopped = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--timeout") == 0) timeout = std::atof(argv[i + 1]);
  }
  if (stopped >= 0) {
    const int rc = size > 1 && stopped < size ? stop_rank(gpu, stopped, timeout) : 2;
    MPI_Finalize();
    return rc;
  }
  set_faults = reinterpret_cast<SetFaults>(dlsym(RTLD_DEFAULT, "strata_double_set_faults"));
  cudaStream_t producer = nullptr, other = nullptr;
  cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  request_progresses(gpu, producer, other);
  wrong_device(gpu);
  pending_error_kept(gpu);
  two_threads(gpu, start.thread_level == MPI_THREAD_MULTIPLE);
  if (size > 1) failures_after_return(gpu, producer);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(other);
  if (rank == 0) std::printf("%d case(s) skipped\n", skipped);
  return gpu_test::end_program();
}
