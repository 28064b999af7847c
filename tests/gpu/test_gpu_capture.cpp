// CUDA graph capture of stream-ordered calls: a call on a stream that
// captures (global mode, the strictest) goes into the graph — strata's
// kernels and NCCL calls — and nothing capture forbids runs (the double
// reports any such call as a violation, which fails the test: a
// synchronisation, a query, an allocation outside relaxed mode, from this
// thread or strata's own). Each graph is replayed three times on new
// inputs, every replay checked bit for bit against the same call made
// uncaptured on the same inputs and, for flat NCCL, against the sum in
// rank order (the double's NCCL and strata's kernels reduce in rank order)
// or the inputs themselves. Plans that cannot be captured (host stages:
// every registered algorithm without graph_capture), requests
// and a first call (which creates the backend and NCCL communicators) are
// refused with InvalidArgument naming why, on every rank, and the capture
// stays valid. Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "stream_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;
using namespace strata::stream_test;

namespace {

constexpr std::size_t kCount = 2053;

// What replay `k` has rank `r` contribute at element i.
float input(int r, std::size_t i, int k) { return contribution(r, i + std::size_t(k) * 7919); }

// The sum (or mean) in rank order of replay k's inputs.
float summed(std::size_t i, int k, bool mean) {
  float acc = input(0, i, k);
  for (int r = 1; r < size; ++r) acc = acc + input(r, i, k);
  return mean ? acc / float(size) : acc;
}

float smallest(std::size_t i, int k) {
  float m = input(0, i, k);
  for (int r = 1; r < size; ++r) m = std::fmin(m, input(r, i, k));
  return m;
}

// One captured call: its buffers, how to call it, what replay k must give.
struct Captured {
  std::string name;
  std::size_t in_count, out_count;
  std::function<void(Communicator&, Tensor in, Tensor out, const CommunicationOptions&)> call;
  std::function<float(std::size_t i, int k)> want;  // out[i] after replay k
  std::function<float(std::size_t i, int k)> in_value = [](std::size_t i, int k) { return input(rank, i, k); };
};

std::vector<Captured> captured_calls() {
  const std::size_t all = kCount * std::size_t(size);
  return {
      {"all_reduce sum", kCount, kCount,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) { c.all_reduce(in, out, ReduceOp::sum, o); },
       [](std::size_t i, int k) { return summed(i, k, false); }},
      {"all_reduce mean (strata's divide kernel)", kCount, kCount,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) { c.all_reduce(in, out, ReduceOp::mean, o); },
       [](std::size_t i, int k) { return summed(i, k, true); }},
      {"all_reduce min (NaN-keeping exchange: kernels and send/receive)", kCount, kCount,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) { c.all_reduce(in, out, ReduceOp::min, o); },
       [](std::size_t i, int k) { return smallest(i, k); }},
      {"reduce_scatter", all, kCount,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) { c.reduce_scatter(in, out, ReduceOp::sum, o); },
       [](std::size_t i, int k) { return summed(std::size_t(rank) * kCount + i, k, false); }},
      {"all_gather", kCount, all,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) { c.all_gather(in, out, o); },
       [](std::size_t i, int k) { return input(int(i / kCount), i % kCount, k); }},
      {"batch_all_reduce in 2 packs (pack kernels, descriptors)", kCount, kCount,
       [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
         // In place over `out`: the input is copied there first (captured too).
         cudaMemcpyAsync(out.data, in.data, in.count * sizeof(float), cudaMemcpyDeviceToDevice,
                         static_cast<cudaStream_t>(o.stream));
         std::vector<Tensor> parts = {out, out};
         parts[0].count = out.count / 2;
         parts[1].data = static_cast<float*>(out.data) + out.count / 2;
         parts[1].count = out.count - out.count / 2;
         c.batch_all_reduce(parts, ReduceOp::sum, PackingOptions{.num_packs = 2}, o);
       },
       [](std::size_t i, int k) { return summed(i, k, false); }},
  };
}

CommunicationOptions on(cudaStream_t stream) {
  CommunicationOptions options;
  options.timeout_seconds = 60;
  options.stream = static_cast<StreamHandle>(stream);
  return options;
}

// Captures `test` on `stream` (global mode), replays it three times on new
// inputs and checks each replay.
void capture_and_replay(Communicator& comm, const Captured& test, int gpu, cudaStream_t stream,
                        const std::string& spec) {
  const bool flat = spec.find('/') == std::string::npos;
  DeviceFloats in(test.in_count), out(test.out_count);
  const std::string what = test.name + " (" + spec + ")";
  // The warm-up: the first call of a plan creates what capture forbids.
  in.upload(stream, [&](std::size_t i) { return test.in_value(i, 0); });
  test.call(comm, in.tensor(gpu), out.tensor(gpu), on(stream));
  cudaStreamSynchronize(stream);

  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  std::string error;
  try {
    test.call(comm, in.tensor(gpu), out.tensor(gpu), on(stream));
  } catch (const std::exception& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!every_rank_check(error.empty() && ended == cudaSuccess && graph,
               what + ": captured into a valid graph" + (error.empty() ? "" : " (" + error + ")")))
    return;
  cudaGraphExec_t exec = nullptr;
  cudaGraphInstantiate(&exec, graph, 0);
  DeviceFloats eager(test.out_count);  // the same call, not captured, on the same inputs
  for (int k = 1; k <= 3; ++k) {
    in.upload(stream, [&](std::size_t i) { return test.in_value(i, k); });
    cudaMemsetAsync(eager.device, 0, test.out_count * sizeof(float), stream);
    test.call(comm, in.tensor(gpu), eager.tensor(gpu), on(stream));
    eager.download(stream);
    in.upload(stream, [&](std::size_t i) { return test.in_value(i, k); });
    cudaMemsetAsync(out.device, 0, test.out_count * sizeof(float), stream);
    cudaGraphLaunch(exec, stream);
    out.download(stream);
    cudaStreamSynchronize(stream);
    std::string first;
    const bool same = same_bits(out.pinned, test.out_count, [&](std::size_t i) { return eager.pinned[i]; }, &first);
    every_rank_check(same, what + ": replay " + std::to_string(k) + " gives the bits of the uncaptured call" +
                      (first.empty() ? "" : " (" + first + ")"));
    if (!flat) continue;  // (a hierarchical plan sums inside the node first)
    const bool reference = same_bits(out.pinned, test.out_count, [&](std::size_t i) { return test.want(i, k); }, &first);
    every_rank_check(reference, what + ": replay " + std::to_string(k) + " gives the reference" +
                           (first.empty() ? "" : " (" + first + ")"));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// `call` inside a capture must raise InvalidArgument mentioning `why` on
// every rank, and leave the capture valid.
void refused(const std::string& what, cudaStream_t stream, const std::string& why, const std::function<void()>& call) {
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  std::string outcome = "no error";
  try {
    call();
  } catch (const InvalidArgument& e) {
    outcome = e.what();
  } catch (const std::exception& e) {
    outcome = std::string("not InvalidArgument: ") + e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (graph) cudaGraphDestroy(graph);
  every_rank_check(outcome.find(why) != std::string::npos, what + ": refused (" + outcome + ")");
  every_rank_check(ended == cudaSuccess, what + ": the capture is still valid after the refusal");
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_capture");
  rank = start.rank;
  size = start.size;
  {
    int nodes = 1;
    const int gpu = gpu_test::use_rank_device(&nodes);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    // From the registry: every algorithm whose plans may be captured, flat
    // and on both levels; the others must be refused.
    std::vector<std::string> specs, uncapturable;
    for (const AlgorithmInfo& a : registered_algorithms()) {
      if (!a.graph_capture) {
        uncapturable.push_back(a.name);
        continue;
      }
      specs.push_back(a.name);
      if (nodes > 1) specs.push_back(a.name + "/" + a.name);
    }
    every_rank_check(!specs.empty(), "the registry has an algorithm whose plans may be captured");
    for (const std::string& spec : specs) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
      for (const Captured& test : captured_calls()) capture_and_replay(comm, test, gpu, stream, spec);
    }

    DeviceFloats data(kCount);
    const Tensor t = data.tensor(gpu);
    {
      Communicator fresh(MPI_COMM_WORLD, Config{.all_reduce_spec = specs.front()});
      refused("a communicator's first CUDA call inside a capture", stream, "warm-up",
              [&] { fresh.all_reduce(t, t, ReduceOp::sum, on(stream)); });
      fresh.all_reduce(t, t, ReduceOp::sum, on(stream));  // the warm-up
      cudaStreamSynchronize(stream);
      refused("a request inside a capture", stream, "cannot be captured", [&] {
        Request r = fresh.iall_reduce(t, t, ReduceOp::sum, on(stream));
        r.wait();
      });
    }
    for (const std::string& spec : uncapturable) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
      comm.all_reduce(t, t, ReduceOp::sum, on(stream));  // outside capture: fine
      cudaStreamSynchronize(stream);
      refused("the host-staged plan " + spec + " inside a capture", stream, "host stages",
              [&] { comm.all_reduce(t, t, ReduceOp::sum, on(stream)); });
    }
    {
      // Through host memory (docs/REPRODUCIBILITY.md): refused, naming why.
      Communicator exact(MPI_COMM_WORLD, Config{.all_reduce_spec = specs.front(), .reproducible = "exact"});
      exact.all_reduce(t, t, ReduceOp::sum, on(stream));  // outside capture: fine
      cudaStreamSynchronize(stream);
      refused("reproducible mode exact inside a capture", stream, "through host memory",
              [&] { exact.all_reduce(t, t, ReduceOp::sum, on(stream)); });
    }
    cudaStreamDestroy(stream);
  }
  return gpu_test::end_program();
}
