"""The seeded mistakes of tests/gpu/double/mistakes.py: the classic errors
of CUDA and NCCL code, each planted in strata's own GPU code as one small
change, with the GPU test that must fail on it and a pattern of the message
that points at it (the double's violation, or the test's failure line).
When the code moves on, a change that no longer applies fails the check:
update its `find` text here."""
import dataclasses


@dataclasses.dataclass
class Mistake:
    name: str       # short, for the report
    what: str       # the classic error it stands for
    file: str       # source file, relative to the repository
    find: str       # text that must occur exactly once in it
    replace: str    # what it becomes
    test: str       # the meson test that must fail
    expect: str     # a regular expression the test's output must match


MISTAKES = [
    Mistake(
        name="no-wait-on-producer",
        what="a missing stream wait on the producer (the legacy default stream)",
        file="lib/gpu_plugin/nccl/engine.cpp",
        find="""  for (const auto& [ours, device] : streams) order_after(ours, cudaStreamLegacy, device);""",
        replace="""  (void)streams;""",
        test="test_gpu_stream-np1-gpus2",
        expect=r"FAIL on rank 0: all_reduce waits for the legacy default stream by default",
    ),
    Mistake(
        name="staging-freed-while-queued",
        what="a staging buffer freed while its copy is queued (a fresh pinned buffer each time one is asked for)",
        file="lib/gpu_plugin/nccl/engine.cpp",
        find="""  return staging_[index]->get(bytes, retired_);""",
        replace="""  staging_[index] = std::make_unique<cuda::PinnedBuffer>();
  return staging_[index]->get(bytes, retired_);""",
        test="test_gpu_collectives-np1-gpus1",
        expect=r"VIOLATION in cudaFreeHost: pinned host allocation .* is still used by '[^']*cudaMemcpyAsync",
    ),
    Mistake(
        name="multi-device-init-outside-group",
        what="a multi-device NCCL init outside ncclGroupStart/End (two replica ranks in one process)",
        file="lib/gpu_plugin/nccl/comm.cpp",
        find="""  const bool grouped = count > 1;""",
        replace="""  const bool grouped = false;""",
        test="test_gpu_batch-np1-gpus2",
        expect=r"VIOLATION in ncclCommInitRankConfig: this process initialises ranks 0 and 1 of one communicator "
               r"in separate calls outside a group",
    ),
    Mistake(
        name="group-end-skipped-on-error",
        what="an ncclGroupEnd skipped on an error path (cudaSetDevice failing inside the group)",
        file="lib/gpu_plugin/nccl/comm.cpp",
        find="""      cudaGetLastError();
      break;
    }
    const ncclResult_t rc = ncclCommInitRankConfig(""",
        replace="""      cudaGetLastError();
      return failure;
    }
    const ncclResult_t rc = ncclCommInitRankConfig(""",
        test="test_gpu_faults-np3-gpus6",
        expect=r"ncclGroupStart (of this thread )?whose ncclGroupEnd (has not come|never came)",
    ),
    Mistake(
        name="wrong-device-at-launch",
        what="the wrong device current at a kernel launch (packing a replica on another GPU)",
        file="lib/gpu_plugin/nccl/packer.cpp",
        find="""    cuda::DeviceGuard on(devices[r]);
    const std::vector<cuda::PackDesc>& host = layouts[r];""",
        replace="""    const std::vector<cuda::PackDesc>& host = layouts[r];""",
        test="test_gpu_batch-np1-gpus2",
        expect=r"VIOLATION in (kernel launch|cudaLaunchKernel): .*pack_kernel.* launched on .* while device \d is current",
    ),
    Mistake(
        name="reduce-scatter-counts-differ",
        what="a reduce-scatter whose counts differ across ranks (each rank's own even slice as the block)",
        file="lib/gpu/nccl.cpp",
        find="""    // recvbuff == sendbuff + rank * block). The tail goes to the last owner.
    const std::size_t block = job.count / std::size_t(owners), prefix = block * std::size_t(owners);""",
        replace="""    // recvbuff == sendbuff + rank * block). The tail goes to the last owner.
    const std::size_t block = util::even_slice(job.count, std::size_t(owners), std::size_t(comm_.rank)).count,
                      prefix = block * std::size_t(owners);""",
        test="test_gpu_collectives-np4-rpn2-gpus2",
        expect=r"(calls diverge on .*ncclReduceScatter|ncclReduceScatter: sendbuff = .* needs \d+ bytes)",
    ),
    Mistake(
        name="root-differs",
        what="a rooted NCCL call whose root differs across ranks (the reduce-scatter's tail sent to each rank itself)",
        file="lib/gpu/nccl.cpp",
        find="""                     job.op, owners - 1});""",
        replace="""                     job.op, comm_.rank});""",
        test="test_gpu_collectives-np4-rpn2-gpus2",
        expect=r"the ranks' NCCL calls diverge on .*: rank \d calls collective #\d+ ncclReduce\(.*root \d\), rank \d "
               r"calls collective #\d+ ncclReduce\(.*root \d\)",
    ),
    Mistake(
        name="host-read-before-sync",
        what="the host reading a device-to-host copy's buffer before synchronising (psgpu's pinned round)",
        file="lib/gpu/pinned_all_gather.cpp",
        find="""    backend.wait_for(set);                          // round k's downloads landed""",
        replace="""""",
        test="test_gpu_collectives-np2-gpus2",
        expect=r"FAIL on rank \d: psgpu .* differs from the host reference",
    ),
    # Integer test data reduce to the same bits in any order; the GPU tests'
    # inexact floats (tests/gpu/reduction_order.hpp) do not.
    Mistake(
        name="reduce-in-reverse-rank-order",
        what="the ranks' contributions reduced in reverse rank order (psgpu's owners, the NaN-keeping exchange)",
        file="lib/gpu/rank_order.cpp",
        find="""  backend.reduce(acc, contributions, contributions + slice_bytes, count, dtype, op);
  for (int r = 2; r < size; ++r)
    backend.reduce(acc, acc, contributions + std::size_t(r) * slice_bytes, count, dtype, op);""",
        replace="""  const auto at = [&](int r) { return contributions + std::size_t(size - 1 - r) * slice_bytes; };
  backend.reduce(acc, at(0), at(1), count, dtype, op);
  for (int r = 2; r < size; ++r)
    backend.reduce(acc, acc, at(r), count, dtype, op);""",
        test="test_gpu_collectives-np3-gpus3",
        expect=r"FAIL on rank \d: psgpu inexact .* differs from the host reference: element \d+ is .*"
               r"\(bit for bit, the order strata fixes\)",
    ),
    Mistake(
        name="combine-replicas-out-of-order",
        what="a rank's replicas combined out of replica order (the last first)",
        file="lib/gpu_plugin/nccl/replicas.cpp",
        find="""  for (std::size_t r = 0; r < replicas; ++r) {
    if (!has_slot(r)) continue;  // replica 0 on the engine's device is the home already""",
        replace="""  for (std::size_t r = replicas; r-- > 0;) {
    if (!has_slot(r)) continue;  // replica 0 on the engine's device is the home already""",
        test="test_gpu_batch-np1-gpus4",
        expect=r"FAIL on rank 0: replicas psgpu .*: results differ from the reference: tensor \d+ replica \d+: "
               r"element \d+ is .*\(bit for bit, the order strata fixes\)",
    ),
    Mistake(
        name="no-wait-on-secondary-producers",
        what="a missing stream wait on the producer of a replica on another device (its legacy default stream)",
        file="lib/gpu_plugin/nccl/engine.cpp",
        find="""  for (const auto& [ours, device] : streams) order_after(ours, cudaStreamLegacy, device);""",
        replace="""  for (const auto& [ours, device] : std::span(streams).first(1)) order_after(ours, cudaStreamLegacy, device);""",
        test="test_gpu_batch-np1-gpus2",
        expect=r"FAIL on rank 0: replicas produced on their own devices just before the call \(.*\): results differ "
               r"from the reference",
    ),
    Mistake(
        name="stream-not-ordered-after-call",
        what="the caller's stream not made to wait for a stream-ordered call's work (the host or later work on "
             "the stream reads the result before the call's event)",
        file="lib/gpu_plugin/nccl/engine.cpp",
        find="""    STRATA_CHECK_CUDA(cudaStreamWaitEvent(static_cast<cudaStream_t>(producer_), fence_event(fence).get(), 0));""",
        replace="""    (void)fence;""",
        test="test_gpu_stream_ordered-np1-gpus1",
        expect=r"FAIL on rank 0: .*: the stream sees the blocking call's bits",
    ),
    Mistake(
        name="check-after-enqueue",
        what="the call check made after the call's NCCL operations were enqueued (NCCL hangs on a mismatched call)",
        file="lib/exec/executor.cpp",
        find="""  return framed(call.options->timeout_seconds, cuda ? ticket.check : nullptr, to_string(call.collective),
                [&](const util::Deadline& deadline) -> std::shared_ptr<Flight> {
                  if (cuda) return run_gpu(call, ticket, deadline);""",
        replace="""  return framed(call.options->timeout_seconds, nullptr, to_string(call.collective),
                [&](const util::Deadline& deadline) -> std::shared_ptr<Flight> {
                  if (cuda) {
                    std::shared_ptr<Flight> flight = run_gpu(call, ticket, deadline);
                    if (ticket.check) verify_in_call(*ticket.check, deadline, to_string(call.collective));
                    return flight;
                  }""",
        test="test_gpu_stream_ordered-np2-gpus2",
        expect=r"diverge",
    ),
    Mistake(
        name="synchronize-inside-capture",
        what="a host wait for the stream inside a CUDA graph capture (the captured call ends as a blocking one)",
        file="lib/exec/execute.cpp",
        find="""  if (mode != gpu::Mode::blocking) return backend.enqueued();""",
        replace="""  if (mode == gpu::Mode::ordered) return backend.enqueued();""",
        test="test_gpu_capture-np1-gpus1",
        expect=r"VIOLATION in cuda(StreamQuery|StreamSynchronize|EventQuery)",
    ),
    Mistake(
        name="host-stage-blocks-caller",
        what="a stream-ordered call's host stage run on the caller's thread (it waits for the producer before it "
             "returns) where the progress thread may run it",
        file="lib/exec/executor.cpp",
        find="""  return mpi_any_thread_ && gpu_.made() && host_stages(gpu_choice(call));""",
        replace="""  return false;""",
        test="test_gpu_stream_ordered-np1-gpus1",
        expect=r"FAIL on rank 0: .* with spec (xring|tree|psgpu): the stream-ordered call returned before its producer ran",
    ),
]
