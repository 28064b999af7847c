// NCCL on the double: graph replays across ranks (each launch a new
// collective, numbered when launched), and NCCL's threading rule.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"

namespace selftest {
namespace {

void nccl_ok(ncclResult_t result, const std::string& what) {
  check(result == ncclSuccess, what + ": " + ncclGetErrorString(result));
}

// Rank 0 captures upload, all-reduce and download once and launches the
// graph for four rounds; rank 1 calls NCCL directly for the same rounds.
// Had capture taken a collective number on rank 0, its launches would
// pair with rank 1's next calls and the double would report the ranks'
// calls diverging. Inexact floats of varied magnitude, checked bit for bit.
void nccl_replay() {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The MPI test harness bounds the case and names the rank of each failure.
  strata::test::RankChecks ranks("test_double_capture nccl-replay", 50);
  route_checks(&ranks);
  check(size == 2, "runs on 2 ranks");
  SELFTEST_OK(cudaSetDevice(rank));
  ncclUniqueId id;
  if (rank == 0) nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  nccl_ok(ncclCommInitRank(&comm, 2, id, rank), "ncclCommInitRank");
  cudaStream_t s = new_stream();
  constexpr std::size_t kCount = 70000;  // more than one of the double's NCCL steps (256 KiB)
  constexpr std::size_t kBytes = kCount * sizeof(float);
  float *a = nullptr, *b = nullptr, *in = nullptr, *out = nullptr;
  SELFTEST_OK(cudaMalloc(&a, kBytes));
  SELFTEST_OK(cudaMalloc(&b, kBytes));
  SELFTEST_OK(cudaHostAlloc(reinterpret_cast<void**>(&in), kBytes, cudaHostAllocDefault));
  SELFTEST_OK(cudaHostAlloc(reinterpret_cast<void**>(&out), kBytes, cudaHostAllocDefault));
  const auto input = [](int r, int round, std::size_t i) {
    return float(r + 1) * 0.37f * float(i % 11 + 1) * float(1 << (i % 13)) / float(round + 3);
  };
  const auto enqueue = [&] {
    SELFTEST_OK(cudaMemcpyAsync(a, in, kBytes, cudaMemcpyHostToDevice, s));
    nccl_ok(ncclAllReduce(a, b, kCount, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    SELFTEST_OK(cudaMemcpyAsync(out, b, kBytes, cudaMemcpyDeviceToHost, s));
  };
  cudaGraphExec_t exec = nullptr;
  cudaGraph_t graph = nullptr;
  if (rank == 0) {
    std::memset(out, 0, kBytes);
    SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    enqueue();
    SELFTEST_OK(cudaStreamEndCapture(s, &graph));
    SELFTEST_OK(cudaGraphInstantiate(&exec, graph, 0));
    SELFTEST_OK(cudaStreamSynchronize(s));
    std::vector<unsigned char> untouched(kBytes, 0);
    check(std::memcmp(out, untouched.data(), kBytes) == 0, "the captured all-reduce did not run at capture");
  }
  std::vector<float> previous;
  const std::vector<int> rounds = {0, 1, 2, 2, 3};
  for (std::size_t k = 0; k < rounds.size(); ++k) {
    const int round = rounds[k];
    for (std::size_t i = 0; i < kCount; ++i) in[i] = input(rank, round, i);
    const bool launch = rank == 0 && k + 1 < rounds.size();
    if (launch) SELFTEST_OK(cudaGraphLaunch(exec, s));
    else enqueue();
    SELFTEST_OK(cudaStreamSynchronize(s));
    bool exact = true;
    for (std::size_t i = 0; i < kCount; ++i) {
      const float want = input(0, round, i) + input(1, round, i);
      exact = exact && std::memcmp(&out[i], &want, sizeof want) == 0;
    }
    check(exact, "round " + std::to_string(k) + (launch ? " (graph launch)" : " (direct)") + " gives the sum bit for bit");
    if (k == 3) check(std::memcmp(previous.data(), out, kBytes) == 0, "two launches on the same input give the same bits");
    previous.assign(out, out + kCount);
  }
  if (exec) SELFTEST_OK(cudaGraphExecDestroy(exec));
  if (graph) SELFTEST_OK(cudaGraphDestroy(graph));
  nccl_ok(ncclCommDestroy(comm), "ncclCommDestroy");
  route_checks(nullptr);
  check(ranks.finish() == 0, "every rank's checks passed");
  MPI_Finalize();
}

// One rank on `device`, its stream and a buffer to reduce.
struct Solo {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* data = nullptr;

  explicit Solo(int device) {
    SELFTEST_OK(cudaSetDevice(device));
    ncclUniqueId id;
    nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    nccl_ok(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank");
    SELFTEST_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    SELFTEST_OK(cudaMalloc(&data, 1024 * sizeof(float)));
    SELFTEST_OK(cudaMemset(data, 0, 1024 * sizeof(float)));
  }
  void all_reduce() {
    nccl_ok(ncclAllReduce(data, data, 1024, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
  }
  void finish() {
    SELFTEST_OK(cudaStreamSynchronize(stream));
    nccl_ok(ncclCommDestroy(comm), "ncclCommDestroy");
  }
};

// A counter threads wait on: each wait ends when the counter reaches its
// value, or after 10 s (a check then fails, naming the step).
class Steps {
 public:
  void reach(int value) {
    {
      const std::lock_guard lock(mutex_);
      value_ = std::max(value_, value);
    }
    reached_.notify_all();
  }
  void await(int value) {
    std::unique_lock lock(mutex_);
    const bool arrived = reached_.wait_for(lock, std::chrono::seconds(10), [&] { return value_ >= value; });
    lock.unlock();
    check(arrived, "the other thread reached step " + std::to_string(value));
  }

 private:
  std::mutex mutex_;
  std::condition_variable reached_;
  int value_ = 0;
};

// Two communicators on device 0: thread A opens a group span and calls NCCL
// for one of them, thread B calls NCCL for the other while A is inside the
// span. `a_calls_first`: A's call comes before B's; otherwise B's whole call
// falls inside A's span before A touches device 0 in it.
void two_threads_in_one_span(bool a_calls_first) {
  Solo one(0), two(0);
  Steps step;
  std::thread a([&] {
    SELFTEST_OK(cudaSetDevice(0));
    nccl_ok(ncclGroupStart(), "ncclGroupStart");
    if (a_calls_first) one.all_reduce();
    step.reach(1);
    step.await(2);
    if (!a_calls_first) one.all_reduce();
    nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
  });
  std::thread b([&] {
    SELFTEST_OK(cudaSetDevice(0));
    step.await(1);
    two.all_reduce();
    step.reach(2);
  });
  a.join();
  b.join();
  one.finish();
  two.finish();
}

// Thread A is inside a group span on device 0 when thread B calls NCCL
// for another communicator on device 0.
void threads_overlap() { two_threads_in_one_span(true); }

// Thread B's whole call falls inside thread A's group span, before A
// touches device 0 in it: still two calls at once.
void threads_inside_span() { two_threads_in_one_span(false); }

// What the rule allows: calls for one device serialized by a lock that
// spans the group; calls for different devices at once; polling
// ncclCommGetAsyncError from another thread during a call.
void threads_allowed() {
  Solo one(0), two(0), three(1);
  std::mutex device0;
  Steps step;
  std::thread a([&] {
    SELFTEST_OK(cudaSetDevice(0));
    for (int i = 0; i < 20; ++i) {
      std::lock_guard lock(device0);
      nccl_ok(ncclGroupStart(), "ncclGroupStart");
      one.all_reduce();
      if (i == 0) {
        step.reach(1);
        step.await(2);  // thread c's first call and poll fall inside this span
      }
      nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
    }
  });
  std::thread b([&] {
    SELFTEST_OK(cudaSetDevice(0));
    step.await(1);
    for (int i = 0; i < 20; ++i) {
      std::lock_guard lock(device0);
      two.all_reduce();
    }
  });
  std::thread c([&] {
    SELFTEST_OK(cudaSetDevice(1));
    step.await(1);
    for (int i = 0; i < 20; ++i) {
      nccl_ok(ncclGroupStart(), "ncclGroupStart");
      three.all_reduce();
      ncclResult_t state = ncclSuccess;
      nccl_ok(ncclCommGetAsyncError(one.comm, &state), "ncclCommGetAsyncError from another thread");
      nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
      if (i == 0) step.reach(2);
    }
  });
  a.join();
  b.join();
  c.join();
  SELFTEST_OK(cudaSetDevice(0));
  one.finish();
  two.finish();
  SELFTEST_OK(cudaSetDevice(1));
  three.finish();
}

}  // namespace

void add_nccl_cases(Cases& cases) {
  cases["nccl-replay"] = {nccl_replay, "2 ranks: graph launches of an all-reduce pair with direct calls (mpirun)"};
  cases["nccl-threads"] = {threads_overlap, "two threads in NCCL calls on one device at once"};
  cases["nccl-threads-span"] = {threads_inside_span, "another thread's NCCL call inside a group span"};
  cases["nccl-threads-allowed"] = {threads_allowed, "serialized calls, other devices, async-error polls"};
}

}  // namespace selftest
