// Failures and misuse on CUDA tensors through the public API, one GPU per
// rank, 3 ranks. Faults come from the CUDA/NCCL test double
// (tests/gpu/double), armed right before the call each case is about
// (strata_double_set_faults, found with dlsym); on a real GPU those cases
// are reported as skipped and only the misuse cases run.
//   mismatch      ranks passing different counts, dtypes or collectives raise
//                 Mismatch on every rank before any GPU work; the communicator
//                 stays usable (the next correct call is right)
//   setup         NCCL initialisation failing on rank 1, the GPU backend's
//                 creation failing on rank 2 (cudaSetDevice), and, with two
//                 replicas per rank (2 x ranks devices), a CUDA failure on
//                 rank 1 between ncclGroupStart and ncclGroupEnd while the
//                 replica communicator is made: every rank raises the same
//                 BackendError naming that rank, none waits for the setup bound
//   stall         rank 1's host thread held inside ncclAllReduce: ranks 0 and 2
//                 raise DeadlineExceeded naming rank 1; the communicator is
//                 broken on every rank (PeerFailure afterwards)
//   async error   rank 1's NCCL operation ends with an asynchronous error: rank
//                 1 raises BackendError, ranks 0 and 2 DeadlineExceeded naming 1
//   device hang   rank 1's NCCL operation never completes on its stream: every
//                 rank raises DeadlineExceeded (NCCL cannot say who is missing,
//                 so none is named) and the NCCL communicators are aborted
//   memory        cudaMalloc failing on rank 2 inside psgpu: rank 2 raises
//                 BackendError (out of memory), ranks 0 and 1 DeadlineExceeded
//                 naming rank 2
//   teardown      NCCL finalization never ending (a peer that died) as a
//                 communicator with three NCCL communicators per process ends:
//                 strata finalizes all three before giving up on any, so the
//                 teardown costs its bound (10 s) once, not once each
// Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;

namespace {

int rank = 0, size = 1, skipped = 0;
constexpr double kTimeout = 1.0;

using SetFaults = void (*)(const char*);
SetFaults set_faults = nullptr;
using History = const char* (*)();
History nccl_history = nullptr;  // the double's record of NCCL lifecycle calls

// What a call raised: its type and text, and the ranks a DeadlineExceeded names.
struct Outcome {
  std::string type, text;
  std::vector<int> named;
};

Outcome outcome(const std::function<void()>& call) {
  try {
    call();
  } catch (const Mismatch& e) {
    return {"Mismatch", e.what(), {}};
  } catch (const DeadlineExceeded& e) {
    return {"DeadlineExceeded", e.what(), e.waiting_for()};
  } catch (const PeerFailure& e) {
    return {"PeerFailure", e.what(), {}};
  } catch (const BackendError& e) {
    return {"BackendError", e.what(), {}};
  } catch (const Error& e) {
    return {"Error", e.what(), {}};
  }
  return {"", "", {}};
}

// The text after "strata [host:rank]: ", which every rank words alike.
std::string tail(const std::string& text) {
  const std::size_t at = text.find("]: ");
  return at == std::string::npos ? text : text.substr(at + 3);
}

bool same_everywhere(const std::string& text) {
  return test::same_on_all_ranks(MPI_COMM_WORLD, test::hash_bytes(text.data(), text.size()));
}

struct DeviceFloats {
  float* p = nullptr;
  std::size_t count;
  explicit DeviceFloats(std::size_t n) : count(n) { cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)); }
  ~DeviceFloats() { cudaFree(p); }
  Tensor tensor(int device, std::size_t n) const { return {p, n, DataType::f32, Memory::cuda, device}; }
  void fill(float v) {
    std::vector<float> host(count, v);
    cudaMemcpy(p, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::vector<float> read() const {
    std::vector<float> host(count);
    cudaMemcpy(host.data(), p, count * sizeof(float), cudaMemcpyDeviceToHost);
    return host;
  }
};

void mismatch_cases(int device) {
  Communicator comm(MPI_COMM_WORLD, Config{"nccl"});
  DeviceFloats data(1000);
  const auto expect_mismatch = [&](const std::string& what, const std::function<void()>& call) {
    const Outcome got = outcome(call);
    every_rank_check(got.type == "Mismatch", what + ": Mismatch on every rank (got " + got.type + ": " + got.text + ")");
  };
  expect_mismatch("counts 100 / 101 on CUDA tensors", [&] {
    comm.all_reduce(data.tensor(device, rank == 0 ? 100 : 101), data.tensor(device, rank == 0 ? 100 : 101),
                    ReduceOp::sum, {.timeout_seconds = 30});
  });
  expect_mismatch("f32 on rank 0, i32 elsewhere", [&] {
    Tensor t = data.tensor(device, 100);
    if (rank != 0) t.dtype = DataType::i32;
    comm.all_reduce(t, t, ReduceOp::sum, {.timeout_seconds = 30});
  });
  expect_mismatch("broadcast on rank 2, all_reduce elsewhere", [&] {
    const Tensor t = data.tensor(device, 100);
    if (rank == 2) comm.broadcast(t, 0, {.timeout_seconds = 30});
    else comm.all_reduce(t, t, ReduceOp::sum, {.timeout_seconds = 30});
  });
  data.fill(float(rank + 1));
  const Outcome got = outcome([&] {
    comm.all_reduce(data.tensor(device, 1000), data.tensor(device, 1000), ReduceOp::sum, {.timeout_seconds = 30});
  });
  const std::vector<float> result = data.read();
  every_rank_check(got.type.empty() && std::all_of(result.begin(), result.end(), [](float v) { return v == 6.0f; }),
          "after the mismatches the communicator works: the next all_reduce is right");
}

// Arms `faults` on every rank, runs `call` on a fresh communicator with
// `spec`, and disarms. Returns false (skipped) without the double.
bool with_faults(const char* faults, const char* spec, const std::function<void(Communicator&)>& call) {
  if (!set_faults) {
    if (rank == 0) std::printf("skip: %s needs the CUDA test double's faults\n", faults);
    ++skipped;
    return false;
  }
  Communicator comm(MPI_COMM_WORLD, Config{spec});
  set_faults(faults);
  call(comm);
  set_faults("");
  MPI_Barrier(MPI_COMM_WORLD);
  return true;
}

void setup_cases(int device) {
  DeviceFloats data(1000);
  with_faults("nccl-init@1", "nccl", [&](Communicator& comm) {
    const Outcome got = outcome([&] {
      comm.all_reduce(data.tensor(device, 1000), data.tensor(device, 1000), ReduceOp::sum, {.timeout_seconds = 30});
    });
    every_rank_check(got.type == "BackendError" && got.text.find("rank 1") != std::string::npos,
            "NCCL initialisation failing on rank 1: BackendError naming rank 1 on every rank (got " + got.type +
                ": " + got.text + ")");
    every_rank_check(same_everywhere(tail(got.text)), "... with the same text on every rank");
  });
  // The backend makes its device current when it is created: start elsewhere.
  int count = 0;
  cudaGetDeviceCount(&count);
  cudaSetDevice((device + 1) % count);
  with_faults("set-device@2", "nccl", [&](Communicator& comm) {
    const Outcome got = outcome([&] {
      comm.all_reduce(data.tensor(device, 1000), data.tensor(device, 1000), ReduceOp::sum, {.timeout_seconds = 30});
    });
    every_rank_check(got.type == "BackendError" && got.text.find("creating the GPU backend") != std::string::npos &&
                got.text.find("rank 2") != std::string::npos,
            "the GPU backend failing on rank 2: the same BackendError naming rank 2 on every rank (got " + got.type +
                ": " + got.text + ")");
    every_rank_check(same_everywhere(tail(got.text)), "... with the same text on every rank");
  });
  cudaSetDevice(device);

  // Two replicas per rank, each on a GPU of its own: the replica
  // communicator initialises two NCCL ranks per process in one group.
  if (count < 2 * size) {
    if (rank == 0) std::printf("skip: the replica setup case needs %d devices per process\n", 2 * size);
    ++skipped;
    return;
  }
  const int second = (device + size) % count;
  cudaSetDevice(second);
  DeviceFloats other(1000);
  cudaSetDevice(device);
  with_faults("grouped-set-device@1", "nccl", [&](Communicator& comm) {
    MultiWorkerAllReduce strategy(comm, 2, AllReduceSpec("nccl"));
    const std::vector<std::pair<PerReplica, Destination>> values = {
        {{data.tensor(device, 1000), other.tensor(second, 1000)}, Destination::all_ranks()}};
    const Outcome got = outcome([&] { strategy.batch_reduce(ReduceOp::sum, values, {.timeout_seconds = 30}); });
    every_rank_check(got.type == "BackendError" && got.text.find("rank 1") != std::string::npos &&
                got.text.find("cudaSetDevice") != std::string::npos,
            "a CUDA failure inside the replica communicator's NCCL group on rank 1: the same BackendError naming "
            "rank 1 on every rank, at once (got " + got.type + ": " + got.text + ")");
    every_rank_check(same_everywhere(tail(got.text)), "... with the same text on every rank");
  });
}

void timeout_cases(int device) {
  DeviceFloats data(1000);
  const auto all_reduce = [&](Communicator& comm) {
    return outcome([&] {
      comm.all_reduce(data.tensor(device, 1000), data.tensor(device, 1000), ReduceOp::sum,
                      {.timeout_seconds = kTimeout});
    });
  };
  const auto broken_afterwards = [&](Communicator& comm) {
    return outcome([&] {
      comm.all_reduce(data.tensor(device, 10), data.tensor(device, 10), ReduceOp::sum, {.timeout_seconds = kTimeout});
    }).type == "PeerFailure";
  };
  const auto names_only = [](const Outcome& got, int who) {
    return got.type == "DeadlineExceeded" && got.named == std::vector<int>{who};
  };
  with_faults("nccl-stall@1:6", "nccl", [&](Communicator& comm) {
    const Outcome got = all_reduce(comm);
    every_rank_check(rank == 1 ? got.type == "DeadlineExceeded" : names_only(got, 1),
            "rank 1 held inside ncclAllReduce: DeadlineExceeded, ranks 0 and 2 naming rank 1 (got " + got.type + ": " +
                got.text + ")");
    every_rank_check(broken_afterwards(comm), "... and the communicator refuses the next call (PeerFailure)");
  });
  with_faults("nccl-error@1", "nccl", [&](Communicator& comm) {
    const Outcome got = all_reduce(comm);
    every_rank_check(rank == 1 ? got.type == "BackendError" && got.text.find("NCCL") != std::string::npos : names_only(got, 1),
            "an asynchronous NCCL error on rank 1: BackendError there, DeadlineExceeded naming rank 1 elsewhere (got " +
                got.type + ": " + got.text + ")");
    every_rank_check(broken_afterwards(comm), "... and the communicator refuses the next call (PeerFailure)");
  });
  with_faults("nccl-hang@1", "nccl", [&](Communicator& comm) {
    const Outcome got = all_reduce(comm);
    every_rank_check(got.type == "DeadlineExceeded" && got.named.empty(),
            "rank 1's NCCL operation never completing: DeadlineExceeded on every rank, nobody named (got " + got.type +
                ": " + got.text + ")");
    every_rank_check(broken_afterwards(comm), "... and the communicator refuses the next call (PeerFailure)");
  });
  with_faults("malloc@2", "psgpu", [&](Communicator& comm) {
    const Outcome got = all_reduce(comm);
    every_rank_check(rank == 2 ? got.type == "BackendError" && got.text.find("cudaMalloc") != std::string::npos
                      : names_only(got, 2),
            "cudaMalloc failing on rank 2 in psgpu: BackendError there, DeadlineExceeded naming rank 2 elsewhere (got " +
                got.type + ": " + got.text + ")");
  });
}

// The lines of `text` after its first `skip` characters that name an NCCL
// lifecycle call, reduced to the call's name.
std::vector<std::string> lifecycle_calls(const std::string& text, std::size_t skip) {
  std::vector<std::string> calls;
  std::size_t at = skip;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    calls.push_back(text.substr(at, text.find(' ', at) - at));
    at = end + 1;
  }
  return calls;
}

void teardown_case(int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (!set_faults || !nccl_history || count < 2 * size) {
    if (rank == 0) std::printf("skip: the teardown case needs the double and %d devices per process\n", 2 * size);
    ++skipped;
    return;
  }
  DeviceFloats data(1000);
  const int second = (device + size) % count;
  cudaSetDevice(second);
  DeviceFloats other(1000);
  cudaSetDevice(device);
  std::size_t before = 0;
  {
    // Three NCCL communicators in this process: the whole communicator's,
    // and the replica communicator's two (one per local replica).
    Communicator comm(MPI_COMM_WORLD, Config{"nccl"});
    comm.all_reduce(data.tensor(device, 1000), data.tensor(device, 1000), ReduceOp::sum, {.timeout_seconds = 30});
    MultiWorkerAllReduce strategy(comm, 2, AllReduceSpec("nccl"));
    const std::vector<std::pair<PerReplica, Destination>> values = {
        {{data.tensor(device, 1000), other.tensor(second, 1000)}, Destination::all_ranks()}};
    strategy.batch_reduce(ReduceOp::sum, values, {.timeout_seconds = 30});
    set_faults("nccl-finalize@*#*");
    before = std::string(nccl_history()).size();
  }
  set_faults("");
  const std::vector<std::string> calls = lifecycle_calls(nccl_history(), before);
  std::string order;
  for (const std::string& c : calls) order += c + " ";
  const auto finalizes = std::count(calls.begin(), calls.end(), "ncclCommFinalize");
  const auto first_abort = std::find(calls.begin(), calls.end(), "ncclCommAbort");
  const bool together = finalizes == 3 && std::count(calls.begin(), calls.end(), "ncclCommAbort") == 3 &&
                        std::count(calls.begin(), first_abort, "ncclCommFinalize") == 3;
  every_rank_check(together, "a teardown whose NCCL finalization never ends finalizes all three communicators before it "
                    "aborts any (one shared bound); calls: " + order);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_faults");
  rank = start.rank;
  size = start.size;
  if (size != 3) {
    if (rank == 0) std::printf("SKIP: needs 3 ranks\n");
    MPI_Finalize();
    return 77;
  }
  set_faults = reinterpret_cast<SetFaults>(dlsym(RTLD_DEFAULT, "strata_double_set_faults"));
  int device = -1;
  {
    Communicator probe(MPI_COMM_WORLD);
    device = probe.topology().ranks[std::size_t(rank)].gpu.cuda_device;
  }
  // NCCL (the double's, here) is loaded by strata's GPU plugin, privately:
  // found once the first Communicator has loaded it.
  if (void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD))
    nccl_history = reinterpret_cast<History>(dlsym(nccl, "strata_double_nccl_history"));
  cudaSetDevice(device);
  mismatch_cases(device);
  setup_cases(device);
  timeout_cases(device);
  teardown_case(device);
  if (rank == 0) std::printf("%d fault case(s) skipped\n", skipped);
  return gpu_test::end_program();
}
