// strata-bench's driver: parses the command line, then for every size
// initialises data, checks one call against the exact reference, times
// strata in the --form asked for (forms.hpp; the check runs that form too;
// --stream-ordered adds host and device times, stream_timing.hpp),
// (optionally) the MPI or NCCL baseline and --overlap's figures
// (overlap.hpp), and prints a row. The
// collective-specific parts are the descriptors in collectives.cpp; what is
// CUDA-specific goes through cuda_buffers.hpp and nccl_baseline.hpp to
// strata-bench-cuda.so, which is loaded only for --memory cuda.
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "command_line.hpp"
#include "cuda_buffers.hpp"
#include "cuda_setup.hpp"
#include "data.hpp"
#include "forms.hpp"
#include "interrupt.hpp"
#include "models.hpp"
#include "nccl_baseline.hpp"
#include "options.hpp"
#include "output.hpp"
#include "overlap.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "results.hpp"
#include "strata/strata.hpp"
#include "stream_timing.hpp"
#include "timing.hpp"

namespace bench {
namespace {

// Exit statuses (also in --help and docs/BENCHMARKING.md). 77 is automake's
// (and meson's) "skipped": the run cannot happen on this machine. 3 is also
// an output (stdout, -J, --csv) that could not be written.
constexpr int kExitWrong = 1, kExitUsage = 2, kExitError = 3, kExitSkip = 77;

struct World {
  int rank = 0, size = 1;
};

// Every rank's host name, grouped: "node07 (4 ranks)". Collective.
std::vector<std::pair<std::string, int>> gather_hosts(const World& w) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * w.size);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::pair<std::string, int>> hosts;
  for (int r = 0; r < w.size; ++r) {
    const std::string host(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == host; });
    if (it == hosts.end()) hosts.emplace_back(host, 1);
    else ++it->second;
  }
  return hosts;
}

// The sweep: min, min*f, min*f^2, ... <= max, each rounded down to whole
// elements (sizes below one element become one element); duplicates dropped.
// The sweep's counts: elements per size, or for reduce_scatter and
// all_gather elements per block (the size is the larger buffer's, `blocks`
// blocks; at least one element each).
std::vector<std::size_t> sweep_counts(const Options& o, std::size_t blocks) {
  const std::size_t element = strata::dtype_size(o.dtype);
  std::vector<std::size_t> counts;
  for (std::size_t bytes = o.min_bytes;; bytes *= o.step_factor) {
    const std::size_t count = std::max<std::size_t>(bytes / element / blocks, 1);
    if (counts.empty() || counts.back() != count) counts.push_back(count);
    if (bytes > o.max_bytes / o.step_factor || bytes == 0) break;
  }
  return counts;
}

// What strata runs for this row, as the communicator's selector says (for a
// batch: the distinct algorithms of its tensors, before packing). For CUDA
// memory the spec itself: algorithm_for describes host-memory calls, and
// the public API does not say what the GPU backend picks.
std::string algorithm_label(const Collective& c, strata::Communicator& comm, Buffers& buffers, const std::string& spec) {
  if (buffers.memory() == strata::Memory::cuda) return spec;
  std::string label;
  for (std::size_t t = 0; t < buffers.in().size(); ++t) {
    const std::size_t bytes = std::max(buffers.in()[t].bytes(), buffers.out()[t].bytes());
    const std::string a = comm.algorithm_for(bytes, c.kind);
    if (label.find(a) == std::string::npos) label += (label.empty() ? "" : "+") + a;
  }
  return label;
}

// Wrong elements of tensor t's output on this rank. reduce_scatter: this
// rank's block of the expected reduction; all_gather: block r is rank r's
// input (the pattern a broadcast from r would give).
// `op`: the run's (the inputs' pattern depends on it).
std::size_t count_wrong(const Collective& c, const Pattern& pattern, strata::ReduceOp op, Buffers& buffers,
                        std::size_t t, const World& w) {
  const strata::Tensor& out = buffers.out()[t];
  if (c.blocks == Blocks::input) return pattern.count_wrong(buffers.host_out(t), out.count, out.count * std::size_t(w.rank));
  if (c.blocks == Blocks::none) return pattern.count_wrong(buffers.host_out(t), out.count, t * 17);
  const std::size_t block = buffers.in()[t].count, bytes = block * strata::dtype_size(out.dtype);
  std::size_t wrong = 0;
  for (int r = 0; r < w.size; ++r)
    wrong += Pattern(out.dtype, op, w.size, r)
                 .count_wrong(static_cast<std::byte*>(buffers.host_out(t)) + std::size_t(r) * bytes, block);
  return wrong;
}

// One checked call on fresh data, in the form timed: #wrong summed over
// all ranks. Data is made and checked in the host copies; for device memory
// it is uploaded before the call and the outputs downloaded after it.
std::size_t check_once(const Collective& c, FormCall& call, Context& ctx, Buffers& buffers, const Pattern& pattern,
                       const World& w) {
  auto in = buffers.in();
  auto out = buffers.out();
  // A persistent request is run once on poisoned inputs first, so that the
  // checked call is a rerun: one that repeated its first result, or read
  // inputs saved from its first run, is counted wrong.
  if (call.reruns()) {
    for (std::size_t t = 0; t < in.size(); ++t) fill_poison(buffers.host_in(t), in[t].count, in[t].dtype);
    buffers.upload();
    call.run();
  }
  for (std::size_t t = 0; t < in.size(); ++t) {
    const std::size_t offset = t * 17;  // batch tensors get different data
    // (all_gather in place: poison the output first, its block is the input)
    if (!buffers.in_place() || c.blocks == Blocks::output) fill_poison(buffers.host_out(t), out[t].count, out[t].dtype);
    pattern.fill(w.rank, buffers.host_in(t), in[t].count, offset);
  }
  buffers.upload();
  call.run();
  buffers.download();

  const bool holds_result = !c.result_on_root || w.rank == ctx.root;
  // Test-only: prove that a wrong value is caught (tests/bench).
  static const bool corrupt = [] {
    const char* v = std::getenv("STRATA_BENCH_CORRUPT");
    return v && std::string(v) == "1";
  }();
  const int victim = c.result_on_root ? ctx.root : w.size - 1;
  const std::size_t last = out.size() - 1;
  if (corrupt && w.rank == victim) corrupt_one(buffers.host_out(last), out[last].count, out[last].dtype);

  unsigned long long wrong = 0;
  if (holds_result)
    for (std::size_t t = 0; t < out.size(); ++t) wrong += count_wrong(c, pattern, ctx.op, buffers, t, w);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return static_cast<std::size_t>(wrong);
}

// The baseline's call: `blocking` makes one complete call (empty: no
// baseline); with --stream-ordered --baseline nccl, `enqueue` puts the same
// call on `stream` and returns, and the baseline is timed as strata's
// stream-ordered call is.
struct BaselineCall {
  std::function<void()> blocking;
  std::function<void()> enqueue;
  cuda::DeviceStream* stream = nullptr;
};

// --stream-ordered's streams, all on the rank's device: strata's calls
// (ctx.call.stream), the NCCL baseline's, and --overlap's busy kernel. Null
// where not used.
struct Streams {
  std::unique_ptr<cuda::DeviceStream> call, baseline, compute;
};

// `simulated`: the device is a simulator's (RunInfo::simulated_device), so the
// row gets times but no bandwidth, ratio or overhead.
Row measure(const Collective& c, Context& ctx, Buffers& buffers, const Pattern& pattern, const Options& o, const World& w,
            const std::string& spec, double bus_factor, bool simulated, const BaselineCall& baseline,
            const Streams& streams) {
  Row row;
  row.simulated = simulated;
  row.count = buffers.total_count();
  row.bytes = buffers.total_bytes();
  row.tensors = buffers.in().size();
  row.algorithm = algorithm_label(c, ctx.comm, buffers, spec);
  // After set_count: a persistent request binds this size's views.
  FormCall call(c, ctx, buffers, o.form, streams.call.get());
  if (o.check) {
    row.wrong = check_once(c, call, ctx, buffers, pattern, w);
  } else {
    for (std::size_t t = 0; t < buffers.in().size(); ++t)
      pattern.fill(w.rank, buffers.host_in(t), buffers.in()[t].count, t * 17);
    buffers.upload();
  }
  if (streams.call) {
    const StreamTiming t = time_on_stream(ctx.mpi_comm, o.warmup, o.iters, *streams.call, [&] { call.start(); });
    row.time = t.complete;
    row.host_time = t.host;
    row.device_time = t.device;
  } else {
    row.time = time_collective(ctx.mpi_comm, o.warmup, o.iters, [&] { call.run(); });
  }
  if (baseline.enqueue) {
    const StreamTiming t = time_on_stream(ctx.mpi_comm, o.warmup, o.iters, *baseline.stream, baseline.enqueue);
    row.baseline_time = t.complete;
    row.baseline_host_time = t.host;
    row.baseline_device_time = t.device;
  } else if (baseline.blocking) {
    row.baseline_time = time_collective(ctx.mpi_comm, o.warmup, o.iters, baseline.blocking);
  }
  if (o.overlap) {
    const OverlapMethod method = streams.compute ? stream_overlap(call, *streams.compute)
                                                 : host_overlap([&] { c.run(ctx, buffers); }, o.overlap_sleep);
    row.overlap = measure_overlap(ctx.mpi_comm, o.warmup, o.iters, call, method);
    if (simulated) row.overlap->percent.reset();  // a simulator's times say nothing about a GPU's overlap
  }
  fill_bandwidths(row, bus_factor);
  return row;
}

// A bad spec (-a) is raised on every rank by the constructor, before any
// communication: a usage error that all ranks exit with together. (An
// InvalidArgument from a later call may be raised on some ranks only -- a
// tensor on a CUDA device strata does not drive, say -- so it is left to
// main's catch-all, which aborts the job rather than let peers wait.)
strata::Communicator make_communicator(const std::string& spec, bool progress_thread) {
  try {
    return strata::Communicator(MPI_COMM_WORLD,
                                strata::Config{.all_reduce_spec = spec, .progress_thread = progress_thread});
  } catch (const strata::InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

// --memory cuda cannot run here: every rank returns 77, rank 0 says why.
int skip(const World& w, const std::string& why) {
  if (w.rank == 0) fmt::print(stderr, "strata-bench: --memory cuda: skipped (exit {}): {}\n", kExitSkip, why);
  return kExitSkip;
}

// The device side of a --memory cuda run, chosen collectively before any
// buffer exists. Empty for host memory.
struct CudaRun {
  int device = -1;
  std::vector<int> devices;  // every rank's, for the report
  std::unique_ptr<DeviceMemory> memory;
  std::optional<std::string> simulated;  // the simulated device's name, when some rank has one
};

int run(const Options& o, const World& w) {
  const Collective& c = collective_for(o.collective);
  const bool on_cuda = o.memory == strata::Memory::cuda;
  int device_count = 0;
  if (on_cuda)
    if (auto why = agree_no_device(MPI_COMM_WORLD, &device_count)) return skip(w, *why);

  // An empty spec lets strata apply STRATA_SPEC or "auto", as for any application.
  const std::string spec_env = std::getenv("STRATA_SPEC") ? std::getenv("STRATA_SPEC") : "";
  const std::string spec = !o.algorithm.empty() ? o.algorithm : !spec_env.empty() ? spec_env : "auto";
  strata::Communicator comm = make_communicator(o.algorithm, o.progress_thread);

  CudaRun cuda_run;
  if (on_cuda) {
    cuda_run.device = choose_device(comm.topology(), comm.rank(), device_count);
    cuda_run.devices = gather_devices(MPI_COMM_WORLD, cuda_run.device);
    if (o.baseline == Baseline::nccl)
      if (auto why = shared_gpu(MPI_COMM_WORLD, cuda_run.device)) return skip(w, *why);
    cuda_run.simulated = simulated_device(MPI_COMM_WORLD, cuda_run.device);
    cuda::set_device(cuda_run.device);
    cuda_run.memory = cuda::device_memory(cuda_run.device);
  }
  Streams streams;
  if (o.stream_ordered) {
    streams.call = cuda::device_stream(cuda_run.device);
    if (o.baseline == Baseline::nccl) streams.baseline = cuda::device_stream(cuda_run.device);
    if (o.overlap) streams.compute = cuda::device_stream(cuda_run.device);
  }
  // Rank 0's outputs, opened now that the run will happen (past the usage
  // checks and the CUDA skips), so that a file that cannot be created fails
  // the run in seconds rather than after the sweep.
  Output table, json, csv;
  if (w.rank == 0) {
    table = Output::standard_output();
    if (!o.json_path.empty()) json = Output::file("--json", o.json_path);
    if (!o.csv_path.empty()) csv = Output::file("--csv", o.csv_path);
  }
  if (!outputs_ok(MPI_COMM_WORLD, {&json, &csv})) return kExitError;

  MPI_Comm mpi_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm);  // the baseline's traffic stays apart from strata's

  RunInfo info;
  info.version = strata::version;
  info.collective = std::string(c.name);
  info.baseline = o.baseline == Baseline::mpi    ? std::string(c.baseline_name)
                  : o.baseline == Baseline::nccl ? std::string(c.nccl_baseline_name)
                                                 : "";
  info.baseline_short = o.baseline == Baseline::nccl ? "nccl" : "mpi";
  info.bus_factor_formula = std::string(c.bus_factor_formula);
  info.bus_factor = c.bus_factor(w.size);
  info.ranks = w.size;
  info.hosts = gather_hosts(w);
  info.dtype = std::string(strata::to_string(o.dtype));
  info.op = c.reduces ? std::string(strata::to_string(o.op)) : "none";
  info.root = c.rooted ? o.root : -1;
  info.in_place = o.in_place || c.always_in_place;
  info.offset = o.offset;
  info.memory = std::string(strata::to_string(o.memory));
  info.devices = cuda_run.devices;
  info.simulated_device = cuda_run.simulated.value_or("");
  info.algorithm = spec;
  info.check = o.check;
  info.iters = o.iters;
  info.warmup = o.warmup;
  info.timeout_seconds = o.timeout_seconds;
  info.form = std::string(to_string(o.form));
  // As strata decides it: the flag, or the environment (session.cpp).
  const char* thread_env = std::getenv("STRATA_PROGRESS_THREAD");
  info.progress_thread = o.progress_thread || (thread_env && std::string(thread_env) == "1");
  info.stream_ordered = o.stream_ordered;
  info.overlap = o.overlap;
  if (o.overlap) info.overlap_compute = o.stream_ordered ? "busy_kernel" : o.overlap_sleep ? "sleep" : "spin";
  if (o.collective == CollectiveKind::batch)
    info.packing = o.num_packs > 0        ? fmt::format("num_packs={}", o.num_packs)
                   : o.bytes_per_pack > 0 ? fmt::format("bytes_per_pack={}", o.bytes_per_pack)
                                          : "automatic";

  std::vector<std::size_t> counts;
  if (o.collective == CollectiveKind::batch) {
    const Model& model = *find_model(o.model);
    for (const auto& t : model.tensors) counts.push_back(t.count);
    info.model = std::string(model.name);
    info.model_source = std::string(model.source);
    info.model_tensors = model.tensors.size();
    info.model_parameters = model.parameters();
  } else {
    counts = sweep_counts(o, c.blocks == Blocks::none ? 1 : std::size_t(w.size));
  }
  const bool sweep = o.collective != CollectiveKind::batch;
  const BlockLayout layout{w.size, w.rank, c.blocks == Blocks::input, c.blocks == Blocks::output};
  Buffers buffers(sweep ? std::vector<std::size_t>{counts.back()} : counts, o.dtype, info.in_place,
                  cuda_run.memory.get(), layout, o.offset);
  const Pattern pattern(o.dtype, o.op, w.size, c.reduces ? -1 : o.root);
  Context ctx{comm, mpi_comm, o.op, o.root,
              strata::CommunicationOptions{.bytes_per_pack = o.bytes_per_pack,
                                           .timeout_seconds = o.timeout_seconds,
                                           .stream = streams.call ? streams.call->handle() : nullptr},
              strata::PackingOptions{.num_packs = o.num_packs}};
  std::unique_ptr<NcclBaseline> nccl;
  if (o.baseline == Baseline::nccl) nccl = cuda::nccl_baseline(mpi_comm, cuda_run.device);
  BaselineCall baseline;
  if (o.baseline == Baseline::mpi) baseline.blocking = [&] { c.run_baseline(ctx, buffers); };
  if (o.baseline == Baseline::nccl) baseline.blocking = [&] { nccl->run(o.collective, ctx, buffers); };
  if (o.baseline == Baseline::nccl && streams.baseline) {
    baseline.enqueue = [&] { nccl->enqueue(o.collective, ctx, buffers, streams.baseline->handle()); };
    baseline.stream = streams.baseline.get();
  }

  if (w.rank == 0) print_header(table, info);
  std::vector<std::size_t> row_bytes;
  const std::size_t blocks = c.blocks == Blocks::none ? 1 : std::size_t(w.size);
  for (std::size_t n : sweep ? counts : std::vector<std::size_t>{buffers.total_count()})
    row_bytes.push_back(n * blocks * strata::dtype_size(o.dtype));
  Progress progress(row_bytes, w.rank == 0 && !o.quiet_progress);

  std::vector<Row> rows;
  const std::size_t nrows = sweep ? counts.size() : 1;
  for (std::size_t k = 0; k < nrows; ++k) {
    if (sweep) buffers.set_count(counts[k]);
    rows.push_back(
        measure(c, ctx, buffers, pattern, o, w, spec, info.bus_factor, info.simulated(), baseline, streams));
    if (w.rank == 0) {
      progress.finish();
      print_row(table, info, rows.back());
    }
    progress.done(k);
  }
  progress.finish();

  Summary summary = summarise(rows);
  if (o.memcpy_reference) {
    // Rank 0 copies alone while the others wait, so it has the memory bus
    // (or its GPU's link) to itself, as a reference should.
    summary.memcpy_bytes = rows.empty() ? 0 : rows.back().bytes;
    const int iters = std::max(o.iters, 3);
    if (w.rank == 0 && on_cuda) {
      // On a simulated device the copies still run (they exercise the
      // code), but their speed is the simulator's: no figure is kept.
      const cuda::CopyBandwidth copy = cuda::pinned_copy_bandwidth(cuda_run.device, summary.memcpy_bytes, iters);
      summary.device_copy = true;
      if (!info.simulated()) {
        summary.d2h_gbps = copy.d2h_gbps;
        summary.h2d_gbps = copy.h2d_gbps;
      }
    } else if (w.rank == 0) {
      summary.memcpy_gbps = memcpy_gbps(summary.memcpy_bytes, iters);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (w.rank == 0) {
    print_footer(table, info, rows, summary);
    if (!o.json_path.empty()) json.write(json_text(info, rows, summary));
    if (!o.csv_path.empty()) csv.write(csv_text(info, rows));
  }
  table.close();
  json.close();
  csv.close();
  // Results that were measured but not all written are an error, even when
  // some value was wrong: the record of the run is incomplete.
  const bool written = outputs_ok(MPI_COMM_WORLD, {&table, &json, &csv});
  nccl.reset();  // NCCL's communicator goes before the MPI one it was bootstrapped over
  MPI_Comm_free(&mpi_comm);
  if (!written) return kExitError;
  return summary.wrong_total ? kExitWrong : 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bench::World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  bench::interrupt::install(w.rank);
  const int status = strata_apps::run_mpi_app<bench::UsageError>(
      "strata-bench", w.rank, bench::kExitUsage, bench::kExitError, [&] {
        std::string help;
        const auto options = bench::parse_options(argc, argv, &help);
        if (!options) {
          bench::Output out;
          if (w.rank == 0) out = bench::Output::standard_output();
          out.write(help);
          out.close();
          return bench::outputs_ok(MPI_COMM_WORLD, {&out}) ? 0 : bench::kExitError;
        }
        if (options->root >= w.size)
          throw bench::UsageError(
              fmt::format("--root = {}: must be below the number of ranks ({})", options->root, w.size));
        return bench::run(*options, w);
      });
  MPI_Finalize();
  return status;
}
