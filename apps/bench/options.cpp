// Command-line parsing with Boost.Program_options. Short flags follow
// nccl-tests (-b -e -f -n -w -c -d -o -r) so that its users can reuse their
// command lines; everything else is strata's.
#include "options.hpp"

#include "byte_count.hpp"
#include "integer.hpp"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions, MPIX_Query_cuda_support among them
#endif

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "models.hpp"
#include "strata/errors.hpp"

namespace po = boost::program_options;

namespace bench {
namespace {

// nccl-tests spells types and ops its own way; accept both vocabularies.
strata::DataType parse_dtype_flag(const std::string& text) {
  static const std::map<std::string, std::string> aliases = {
      {"float", "f32"},  {"float32", "f32"}, {"double", "f64"}, {"float64", "f64"}, {"half", "f16"},
      {"float16", "f16"}, {"bfloat16", "bf16"}, {"int8", "i8"}, {"char", "i8"},   {"uint8", "u8"},
      {"int32", "i32"},  {"int", "i32"},     {"uint32", "u32"}, {"int64", "i64"}, {"uint64", "u64"}};
  auto it = aliases.find(text);
  try {
    return strata::parse_dtype(it == aliases.end() ? text : it->second, "--datatype");
  } catch (const strata::InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

strata::ReduceOp parse_op_flag(const std::string& text) {
  try {
    return strata::parse_reduce_op(text == "avg" ? "mean" : text, "--op");
  } catch (const strata::InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

CollectiveKind parse_collective(const std::string& text) {
  if (text == "all_reduce" || text == "allreduce") return CollectiveKind::all_reduce;
  if (text == "reduce") return CollectiveKind::reduce;
  if (text == "broadcast" || text == "bcast") return CollectiveKind::broadcast;
  if (text == "batch") return CollectiveKind::batch;
  if (text == "reduce_scatter" || text == "reducescatter") return CollectiveKind::reduce_scatter;
  if (text == "all_gather" || text == "allgather") return CollectiveKind::all_gather;
  throw UsageError(fmt::format(
      "--collective = '{}' is not one of: all_reduce, reduce, broadcast, batch, reduce_scatter, all_gather", text));
}

Form parse_form(const std::string& text) {
  if (text == "blocking") return Form::blocking;
  if (text == "nonblocking") return Form::nonblocking;
  if (text == "persistent") return Form::persistent;
  throw UsageError(fmt::format("--form = '{}' is not one of: blocking, nonblocking, persistent", text));
}

bool parse_bool_flag(const std::string& text, const char* flag) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return false;
  throw UsageError(fmt::format("{} = '{}': expected 0 or 1", flag, text));
}

// Whether MPI calls may be given device pointers. Open MPI answers at run
// time through its CUDA extension; an MPI without that extension is taken
// not to be CUDA-aware.
bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

strata::Memory parse_memory(const std::string& text) {
  if (text == "host") return strata::Memory::host;
  if (text == "cuda") return strata::Memory::cuda;
  throw UsageError(fmt::format("--memory = '{}' is not one of: host, cuda", text));
}

Baseline parse_baseline(const std::string& text, strata::Memory memory) {
  if (text.empty()) return Baseline::none;
  if (text == "nccl") {
    if (memory != strata::Memory::cuda)
      throw UsageError("--baseline nccl: NCCL works on CUDA buffers only; add --memory cuda, or use --baseline mpi "
                       "for host memory");
    return Baseline::nccl;
  }
  if (text == "mpi") {
    if (memory == strata::Memory::cuda && !mpi_is_cuda_aware())
      throw UsageError("--baseline mpi with --memory cuda: this MPI is not CUDA-aware (MPIX_Query_cuda_support() "
                       "is not 1; Debian's Open MPI is built without CUDA), so MPI_Allreduce cannot read device "
                       "buffers; use --baseline nccl");
    return Baseline::mpi;
  }
  throw UsageError(fmt::format("--baseline = '{}' is not one of: mpi, nccl", text));
}

// The largest message size -b/-e accept: 64 TiB. An out-of-place run holds
// two buffers of it, and 4-level page tables (x86-64, AArch64) give a process
// 128 TiB of address space, so nothing larger can be allocated; the bound
// also keeps the buffer arithmetic far from overflowing.
constexpr std::size_t kMaxBytes = std::size_t{1} << 46;
// -n and -w at most: each timed iteration keeps its time (8 bytes per rank,
// all reduced at once), and a million is far beyond what a stable median
// needs.
constexpr long long kMaxIterations = 1'000'000;

std::size_t parse_size_flag(const std::string& text, const char* flag) {
  std::size_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{} = '{}': {}", flag, text, e.what()));
  }
  if (bytes > kMaxBytes)
    throw UsageError(fmt::format("{} = '{}': at most {}G ({}): two buffers of more fit in no address space", flag,
                                 text, kMaxBytes >> 30, human_bytes(kMaxBytes)));
  return bytes;
}

// An integer flag within [lo, hi] (strata_apps::parse_integer's rules).
long long parse_integer_flag(const std::string& text, const char* flag, long long lo, long long hi) {
  const std::optional<long long> value = strata_apps::parse_integer(text, lo, hi);
  if (!value) throw UsageError(fmt::format("{} = '{}': expected an integer from {} to {}", flag, text, lo, hi));
  return *value;
}

// A number of seconds: a finite decimal number >= 0 ("0.5", "1e3"). "inf"
// and "nan" parse as doubles, but strata would refuse them at the first call,
// on every rank, as an error rather than a usage mistake.
double parse_seconds_flag(const std::string& text, const char* flag) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end || !std::isfinite(value) || value < 0)
    throw UsageError(fmt::format("{} = '{}': expected a finite number of seconds >= 0 (0 = no timeout)", flag, text));
  return value;
}

// -J/--csv: a file name; an empty one is a mistake (a shell variable left
// unset, say), not a request for no output.
std::string parse_path_flag(const std::string& text, const char* flag) {
  if (text.empty()) throw UsageError(fmt::format("{} = '': expected a file name", flag));
  return text;
}

}  // namespace

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::batch: return "batch";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_gather: return "all_gather";
  }
  return "?";
}

std::string_view to_string(Form form) {
  switch (form) {
    case Form::blocking: return "blocking";
    case Form::nonblocking: return "nonblocking";
    case Form::persistent: return "persistent";
  }
  return "?";
}

std::size_t parse_size(const std::string& text) {
  std::string why;
  if (const auto bytes = strata_apps::parse_byte_count(text, why)) return *bytes;
  throw UsageError(why);
}

std::string human_bytes(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  return value == std::floor(value) ? fmt::format("{:.0f} {}", value, units[unit])
                                    : fmt::format("{:.1f} {}", value, units[unit]);
}

std::optional<Options> parse_options(int argc, char** argv, std::string* help_text) {
  Options o;
  std::string min_bytes = "8", max_bytes = "64M", dtype = "f32", op = "sum", collective = "all_reduce";
  std::string memory = "host", baseline, check = "1", form = "blocking", overlap_compute = "spin";
  // Numbers are read as text and parsed below (parse_integer_flag,
  // parse_seconds_flag), so that every bad value gets the same one-line
  // message naming the flag and the value.
  std::string step_factor = "2", iters = "20", warmup = "5", root = "0", timeout = "0", bytes_per_pack = "0",
              num_packs = "0", offset = "0", json_path, csv_path;
  po::options_description sweep("Sizes and iterations (nccl-tests flags)", 100);
  sweep.add_options()
      ("minbytes,b", po::value(&min_bytes)->default_value(min_bytes), "smallest message size in bytes (k/M/G suffixes, powers of 1024; at most 64 TiB)")
      ("maxbytes,e", po::value(&max_bytes)->default_value(max_bytes), "largest message size in bytes")
      ("stepfactor,f", po::value(&step_factor)->default_value(step_factor), "multiply the size by this factor between rows (>= 2)")
      ("iters,n", po::value(&iters)->default_value(iters), "timed iterations per size (1 to 1000000); the reported time is their median")
      ("warmup_iters,w", po::value(&warmup)->default_value(warmup), "untimed warm-up iterations per size (0 to 1000000)")
      ("check,c", po::value(&check)->default_value(check), "1: check every size's result against the bench's own reference (#wrong column); 0: skip");
  po::options_description what("What to run", 100);
  what.add_options()
      ("collective", po::value(&collective)->default_value(collective), "all_reduce | reduce | broadcast | batch | reduce_scatter | all_gather (sizes: the larger buffer, size() blocks)")
      ("model", po::value(&o.model), "with --collective batch: the model whose gradients form one batch (resnet50 | bert-large | gpt2-small)")
      ("datatype,d", po::value(&dtype)->default_value(dtype), "f32 f64 f16 bf16 i8 u8 i32 u32 i64 u64 (or nccl-tests' float, half, double, int32, ...)")
      ("op,o", po::value(&op)->default_value(op), "sum | mean | min | max | prod (avg = mean)")
      ("root,r", po::value(&root)->default_value(root), "root rank for reduce and broadcast")
      ("algorithm,a", po::value(&o.algorithm)->default_value("", "$STRATA_SPEC or auto"), "strata's all_reduce_spec: 'auto', a name (tree, mpi, xring, rechd, pscpu), 'name#shards' or size-limited tuples such as 'tree:4k:xring'")
      ("in-place", po::bool_switch(&o.in_place), "in place (output buffer = input buffer)")
      ("offset", po::value(&offset)->default_value(offset), "host buffers start this many bytes past a page boundary (0 to 4095, a whole number of elements; 16 is where glibc's malloc puts a large std::vector's data)")
      ("memory,m", po::value(&memory)->default_value(memory), "host | cuda (cuda: device buffers on each rank's GPU; exit 77 where a rank has none)")
      ("timeout,T", po::value(&timeout)->default_value(timeout), "CommunicationOptions::timeout_seconds for every call (0 = none)")
      ("bytes-per-pack", po::value(&bytes_per_pack)->default_value(bytes_per_pack), "with --collective batch: CommunicationOptions::bytes_per_pack (0 = automatic; 1 = every tensor its own pack, i.e. no packing)")
      ("num-packs", po::value(&num_packs)->default_value(num_packs), "with --collective batch: PackingOptions::num_packs (0 = use bytes_per_pack)")
      ("form", po::value(&form)->default_value(form), "how strata's call is made in the timed loop: blocking | nonblocking (iall_reduce etc., then Request::wait) | persistent (all_reduce_init etc. once per size, then start + wait per call; not for batch)")
      ("progress-thread", po::bool_switch(&o.progress_thread), "Config::progress_thread: started requests may run on the communicator's progress thread (strata/request.hpp)")
      ("stream-ordered", po::bool_switch(&o.stream_ordered), "with --memory cuda: every strata call gets a CUDA stream (CommunicationOptions::stream) and returns once enqueued; adds each call's host time (until it returns) and device time (events on the stream), and the NCCL baseline's")
      ("overlap", po::bool_switch(&o.overlap), "with --form nonblocking or persistent: per size, the share of the call a CPU-bound computation hides (OSU's osu_iallreduce method): pure, compute, total and overlap columns; with --stream-ordered: the share a GPU kernel on another stream hides (comm, compute, both and overlap columns)")
      ("overlap-compute", po::value(&overlap_compute)->default_value(overlap_compute), "with --overlap and a started form: spin (a CPU-bound loop, default) | sleep (the core stays free, as for a host thread waiting on its GPU or on I/O)");
  po::options_description compare("Comparison and output", 100);
  compare.add_options()
      ("baseline", po::value(&baseline), "mpi: also time MPI_Allreduce / MPI_Reduce / MPI_Bcast on the same buffers, same run; nccl (with --memory cuda): ncclAllReduce / ncclReduce / ncclBroadcast")
      ("memcpy-reference", po::bool_switch(&o.memcpy_reference), "also print, at the largest size, the single-core memcpy bandwidth (host memory) or the pinned device->host and host->device copy bandwidth (cuda)")
      ("json,J", po::value(&json_path), "write the results as JSON to this file (rank 0)")
      ("csv", po::value(&csv_path), "write the rows as CSV to this file (rank 0)")
      ("no-progress", po::bool_switch(&o.quiet_progress), "no progress lines on stderr")
      ("help,h", "print this help and exit");
  po::options_description all;
  all.add(sweep).add(what).add(compare);

  po::variables_map vm;
  try {
    po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).run();
    // Without a positional description Boost keeps stray words unnamed, and
    // store() would drop them silently.
    for (const po::option& option : parsed.options)
      if (option.string_key.empty())
        throw UsageError(fmt::format("unexpected argument '{}': strata-bench takes flags only",
                                     option.original_tokens.empty() ? "" : option.original_tokens.front()));
    // A repeated flag: the last one wins, so that wrapper scripts
    // (scripts/bench.sh) can put defaults first and the user's flags after.
    std::set<std::string> seen;
    std::vector<po::option> kept;
    for (auto it = parsed.options.rbegin(); it != parsed.options.rend(); ++it)
      if (seen.insert(it->string_key).second) kept.push_back(*it);
    parsed.options.assign(kept.rbegin(), kept.rend());
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    if (help_text) {
      std::ostringstream out;
      out << "usage: mpirun -np N strata-bench [options]\n"
             "Times strata's collectives over a range of sizes (nccl-tests style) and checks every result.\n"
             "Exit status: 0 all results right, 1 wrong values, 2 bad command line, 3 a strata, MPI, CUDA or NCCL\n"
             "error, or an output (stdout, --json, --csv) that could not be written, 77 skipped: --memory cuda\n"
             "where some rank has no usable CUDA device (or this strata-bench was built without CUDA), or\n"
             "--baseline nccl with two ranks on one GPU, 130 interrupted (SIGINT, SIGTERM; no -J/--csv file is\n"
             "left; under mpirun, mpirun's own status).\n"
          << all
          << "\nExamples:\n"
             "  mpirun -np 2 strata-bench -b 8 -e 64M -f 2 --baseline mpi\n"
             "  mpirun -np 4 strata-bench -a 'tree:64k:xring' -d bf16 -o mean -J out.json\n"
             "  mpirun -np 2 strata-bench --collective batch --model resnet50 --baseline mpi\n"
             "  mpirun -np 2 strata-bench -b 1M -e 64M --form nonblocking --overlap --progress-thread\n"
             "  mpirun -np 1 strata-bench -m cuda -a nccl --baseline nccl -b 8 -e 64K\n"
             "  mpirun -np 2 strata-bench -m cuda --stream-ordered --baseline nccl -b 8 -e 64K\n"
             "  mpirun -np 2 strata-bench -m cuda --stream-ordered --overlap -b 1M -e 64M\n"
             "See docs/BENCHMARKING.md for the columns and what is timed.\n";
      *help_text = out.str();
    }
    return std::nullopt;
  }

  o.min_bytes = parse_size_flag(min_bytes, "--minbytes");
  o.max_bytes = parse_size_flag(max_bytes, "--maxbytes");
  if (o.min_bytes > o.max_bytes)
    throw UsageError(fmt::format("--minbytes = {} is larger than --maxbytes = {}", o.min_bytes, o.max_bytes));
  // A factor above kMaxBytes gives the same single row as kMaxBytes.
  o.step_factor = static_cast<std::size_t>(parse_integer_flag(step_factor, "--stepfactor", 2, kMaxBytes));
  o.iters = static_cast<int>(parse_integer_flag(iters, "--iters", 1, kMaxIterations));
  o.warmup = static_cast<int>(parse_integer_flag(warmup, "--warmup_iters", 0, kMaxIterations));
  o.check = parse_bool_flag(check, "--check");
  o.dtype = parse_dtype_flag(dtype);
  o.op = parse_op_flag(op);
  o.collective = parse_collective(collective);
  // The upper bound against the rank count is main's (MPI knows it).
  o.root = static_cast<int>(parse_integer_flag(root, "--root", 0, INT_MAX));
  o.timeout_seconds = parse_seconds_flag(timeout, "--timeout");
  o.bytes_per_pack = parse_integer_flag(bytes_per_pack, "--bytes-per-pack", 0, LLONG_MAX);
  o.num_packs = static_cast<int>(parse_integer_flag(num_packs, "--num-packs", 0, INT_MAX));
  if (vm.count("json")) o.json_path = parse_path_flag(json_path, "--json");
  if (vm.count("csv")) o.csv_path = parse_path_flag(csv_path, "--csv");
  o.memory = parse_memory(memory);
  o.baseline = parse_baseline(baseline, o.memory);
  o.offset = static_cast<std::size_t>(parse_integer_flag(offset, "--offset", 0, 4095));
  if (o.offset % strata::dtype_size(o.dtype) != 0)
    throw UsageError(fmt::format("--offset = {} is not a whole number of {} elements ({} bytes each)", o.offset,
                                 strata::to_string(o.dtype), strata::dtype_size(o.dtype)));
  if (o.offset != 0 && o.memory != strata::Memory::host)
    throw UsageError("--offset applies to host memory only (device allocations keep their own alignment)");
  o.form = parse_form(form);
  if (o.form == Form::persistent && o.collective == CollectiveKind::batch)
    throw UsageError("--form persistent with --collective batch: strata has no persistent batch_all_reduce (use "
                     "--form nonblocking: ibatch_all_reduce)");
  if (o.stream_ordered && o.memory != strata::Memory::cuda)
    throw UsageError("--stream-ordered: a stream-ordered call takes CUDA tensors and a CUDA stream; add --memory cuda");
  if (o.stream_ordered && o.form != Form::blocking)
    throw UsageError(fmt::format("--stream-ordered with --form {}: a stream-ordered call is the blocking call given a "
                                 "stream, which returns once enqueued; drop --form {} (or --stream-ordered to time "
                                 "the request)",
                                 to_string(o.form), to_string(o.form)));
  if (o.overlap && o.form == Form::blocking && !o.stream_ordered)
    throw UsageError("--overlap needs a started call to overlap: add --form nonblocking or --form persistent (a host "
                     "computation between start and wait), or --memory cuda --stream-ordered (a GPU kernel on another "
                     "stream)");
  if (overlap_compute != "spin" && overlap_compute != "sleep")
    throw UsageError(fmt::format("--overlap-compute = '{}' is not one of: spin, sleep", overlap_compute));
  if (!vm["overlap-compute"].defaulted() && !o.overlap)
    throw UsageError("--overlap-compute only applies to --overlap");
  if (!vm["overlap-compute"].defaulted() && o.stream_ordered)
    throw UsageError("--overlap-compute chooses the host computation of a started form; with --stream-ordered the "
                     "computation is a GPU kernel (strata::bench::busy_kernel): drop --overlap-compute");
  o.overlap_sleep = overlap_compute == "sleep";
  if (o.collective == CollectiveKind::batch) {
    if (o.model.empty()) throw UsageError(fmt::format("--collective batch needs --model ({})", model_names()));
    if (!find_model(o.model)) throw UsageError(fmt::format("--model = '{}' is not one of: {}", o.model, model_names()));
    if (o.in_place) throw UsageError("--in-place: batch_all_reduce is always in place; drop the flag");
  } else if (!o.model.empty()) {
    throw UsageError("--model only applies to --collective batch");
  } else if (o.bytes_per_pack != 0 || o.num_packs != 0) {
    // Packing options on one tensor would be silently ignored.
    throw UsageError(fmt::format("--{} only applies to --collective batch",
                                 o.bytes_per_pack != 0 ? "bytes-per-pack" : "num-packs"));
  }
  if (o.baseline == Baseline::mpi && o.collective != CollectiveKind::broadcast && (o.dtype == strata::DataType::f16 || o.dtype == strata::DataType::bf16))
    throw UsageError(fmt::format("--baseline mpi with --datatype {}: MPI has no {} type to reduce; use f32 for the comparison",
                                 strata::to_string(o.dtype), strata::to_string(o.dtype)));
  return o;
}

}  // namespace bench
