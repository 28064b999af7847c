// Stream-ordered calls (CommunicationOptions::stream on CUDA tensors) for
// every kind of plan: flat NCCL, psgpu, host algorithms through pinned
// memory, hierarchical plans with NCCL or host levels, batches with
// packing, reduce, broadcast, reduce-scatter and all-gather. Shown by event
// order, never by time:
//   - the call returns before its GPU work can start: the producer stream is
//     held at a latch (stream_test.hpp) that only a host function enqueued
//     on another stream after the call returned opens. A call that waited
//     for its producer (or a host stage run on the caller's thread) would
//     never see it open; the latch gives up after a bound and the case fails;
//   - work enqueued on another stream right after the call runs while the
//     call's work is still pending (it is what opens the latch);
//   - work enqueued on the stream after the call sees the result: the
//     download on the same stream, compared bit for bit with the same call
//     made blocking (no stream) on the same inputs, which test_gpu_collectives
//     checks against the host reference; for flat NCCL also with the sum in
//     rank order itself.
// The call check still runs before anything is enqueued: a mismatched
// stream-ordered call raises Mismatch on every rank, and NCCL (the double)
// sees no diverging call.
// Needs MPI_THREAD_MULTIPLE for the plans with host stages (they run on the
// progress thread); under a lower level those cases are reported skipped.
// Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu_specs.hpp"
#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "stream_test.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;
using namespace strata::stream_test;

namespace {

constexpr std::size_t kCount = 4099;  // a tail for every slice and vector split

struct Streams {
  cudaStream_t producer = nullptr;  // the caller's stream the calls are ordered on
  cudaStream_t other = nullptr;     // work enqueued right after the call
  Streams() {
    cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  }
  ~Streams() {
    cudaStreamDestroy(producer);
    cudaStreamDestroy(other);
  }
};

// One collective as a test case: how big its input and output are (in
// floats, for this rank), what each rank contributes, and how to call it.
struct Case {
  std::string name;
  std::size_t in_count = kCount;
  std::size_t out_count = kCount;
  bool in_place = false;
  std::function<void(Communicator&, Tensor in, Tensor out, const CommunicationOptions&)> call;
  bool rank_order_reference = false;  // also compare with the sum in rank order (flat NCCL all-reduce)
};

std::vector<Case> cases() {
  std::vector<Case> list;
  list.push_back({"all_reduce sum", kCount, kCount, false,
                  [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
                    c.all_reduce(in, out, ReduceOp::sum, o);
                  }});
  list.push_back({"all_reduce mean in place", kCount, kCount, true,
                  [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
                    c.all_reduce(in, out, ReduceOp::mean, o);
                  }});
  list.push_back({"reduce to the last rank", kCount, kCount, false,
                  [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
                    c.reduce(in, out, ReduceOp::sum, c.size() - 1, o);
                  }});
  list.push_back({"broadcast from rank 0", kCount, kCount, true,
                  [](Communicator& c, Tensor in, Tensor, const CommunicationOptions& o) { c.broadcast(in, 0, o); }});
  list.push_back({"reduce_scatter", kCount * std::size_t(size), kCount, false,
                  [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
                    c.reduce_scatter(in, out, ReduceOp::sum, o);
                  }});
  list.push_back({"all_gather", kCount, kCount * std::size_t(size), false,
                  [](Communicator& c, Tensor in, Tensor out, const CommunicationOptions& o) {
                    c.all_gather(in, out, o);
                  }});
  list.push_back({"batch_all_reduce, 3 tensors in 2 packs", kCount, kCount, true,
                  [](Communicator& c, Tensor in, Tensor, const CommunicationOptions& o) {
                    std::vector<Tensor> tensors = {in, in, in};
                    const std::size_t third = in.count / 3;
                    auto* base = static_cast<float*>(in.data);
                    tensors[0].count = third;
                    tensors[1].data = base + third;
                    tensors[1].count = third;
                    tensors[2].data = base + 2 * third;
                    tensors[2].count = in.count - 2 * third;
                    c.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{.num_packs = 2}, o);
                  }});
  return list;
}

// Runs `test` on fresh buffers; returns the output as the rank holds it.
// `ordered`: with the producer stream held by a latch that opens only from
// the other stream after the call returned; else blocking (no stream).
std::vector<float> run_case(Communicator& comm, const Case& test, int gpu, Streams& streams, bool ordered,
                            bool* returned_first) {
  DeviceFloats in(test.in_count), out(test.out_count);
  const auto contribution_of = [&](std::size_t i) {
    // reduce_scatter's input is every rank's blocks; all_gather's this rank's one.
    return contribution(rank, i);
  };
  cudaMemset(out.device, 0, test.out_count * sizeof(float));
  cudaDeviceSynchronize();
  Tensor tin = in.tensor(gpu), tout = test.in_place ? in.tensor(gpu) : out.tensor(gpu);
  if (!ordered) {
    in.upload(cudaStreamLegacy, contribution_of);
    test.call(comm, tin, tout, {.timeout_seconds = 60});
  } else {
    Latch latch;
    latch.hold(streams.producer);
    in.upload(streams.producer, contribution_of);
    CommunicationOptions options;
    options.timeout_seconds = 60;
    options.stream = static_cast<StreamHandle>(streams.producer);
    test.call(comm, tin, tout, options);
    latch.open_from(streams.other);  // enqueued after the call returned: its work cannot have run yet
    cudaStreamSynchronize(streams.other);
    (test.in_place ? in : out).download(streams.producer);
    cudaStreamSynchronize(streams.producer);
    *returned_first = !latch.gave_up();
    DeviceFloats& result = test.in_place ? in : out;
    return std::vector<float>(result.pinned, result.pinned + result.count);
  }
  DeviceFloats& result = test.in_place ? in : out;
  result.download(cudaStreamLegacy);
  cudaStreamSynchronize(cudaStreamLegacy);
  return std::vector<float>(result.pinned, result.pinned + result.count);
}

// The specs to run (gpu_specs.hpp), the hierarchical ones only over
// several (virtual) nodes: on one node they run flat.
std::vector<std::string> specs(int nodes) {
  std::vector<std::string> list;
  for (const std::string& spec : gpu_test::gpu_specs())
    if (nodes > 1 || spec.find('/') == std::string::npos) list.push_back(spec);
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_stream_ordered", MPI_THREAD_MULTIPLE);
  rank = start.rank;
  size = start.size;
  const bool any_thread = start.thread_level == MPI_THREAD_MULTIPLE;
  {
    Streams streams;
    int nodes = 1;
    const int gpu = gpu_test::use_rank_device(&nodes);
    bool blocked = false;  // a stream-ordered call waited for its producer: say so once, not per case
    for (const std::string& spec : specs(nodes)) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
      for (const Case& test : cases()) {
        const std::string plan = comm.algorithm_for(test.in_count * sizeof(float), Collective::all_reduce, Memory::cuda);
        const std::string what = test.name + " with spec " + spec;
        std::vector<float> want, got;
        bool returned_first = false;
        try {
          want = run_case(comm, test, gpu, streams, false, nullptr);
        } catch (const Unavailable& e) {
          if (rank == 0) std::printf("skipped: %s: %s\n", what.c_str(), e.what());
          continue;
        }
        const bool host_stages = spec != "nccl" && spec != "nccl/nccl";
        if (host_stages && !any_thread) {
          if (rank == 0) std::printf("skipped: %s stream-ordered: its host stages need MPI_THREAD_MULTIPLE\n",
                                     what.c_str());
          continue;
        }
        if (blocked) {  // (each further case would wait for the latch's bound too)
          if (rank == 0) std::printf("skipped: %s: an earlier stream-ordered call blocked its caller\n", what.c_str());
          continue;
        }
        got = run_case(comm, test, gpu, streams, true, &returned_first);
        blocked = !every_rank_check(returned_first, what + ": the stream-ordered call returned before its producer ran");
        std::string first;
        const bool same = same_bits(got.data(), got.size(), [&](std::size_t i) { return want[i]; }, &first);
        every_rank_check(same, what + ": the stream sees the blocking call's bits" + (first.empty() ? "" : " (" + first + ")"));
        if (spec == "nccl" && test.name == "all_reduce sum") {
          const bool summed = same_bits(got.data(), got.size(), [&](std::size_t i) { return reference(i, size); }, &first);
          every_rank_check(summed,
                  what + ": the ranks' contributions summed in rank order" + (first.empty() ? "" : " (" + first + ")"));
        }
      }
    }

    // The call check before anything is enqueued: ranks passing different
    // counts raise Mismatch on every rank, and the double's NCCL never sees
    // the diverging calls (it would report them).
    if (size > 1) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
      DeviceFloats data(kCount);
      CommunicationOptions options;
      options.timeout_seconds = 30;
      options.stream = static_cast<StreamHandle>(streams.producer);
      std::string outcome = "no error";
      try {
        comm.all_reduce(data.tensor(gpu, 0, rank == 0 ? kCount - 1 : kCount), data.tensor(gpu, 0, rank == 0 ? kCount - 1 : kCount),
                        ReduceOp::sum, options);
      } catch (const Mismatch&) {
        outcome = "Mismatch";
      } catch (const std::exception& e) {
        outcome = e.what();
      }
      cudaStreamSynchronize(streams.producer);
      every_rank_check(outcome == "Mismatch", "a mismatched stream-ordered call raises Mismatch on every rank (" + outcome + ")");
      bool usable = true;
      try {
        comm.check();
        comm.all_reduce(data.tensor(gpu), data.tensor(gpu), ReduceOp::sum, options);
        cudaStreamSynchronize(streams.producer);
      } catch (const std::exception& e) {
        usable = false;
        std::printf("rank %d: %s\n", rank, e.what());
      }
      every_rank_check(usable, "after the Mismatch the communicator stays usable");
    }
  }
  return gpu_test::end_program();
}
