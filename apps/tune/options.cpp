// Boost.Program_options, with the apps' shared parsers for byte counts and
// integers (apps/common) so strata-tune accepts exactly what strata-bench
// accepts for -b/-e/-f/-n/-w.
#include "options.hpp"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "byte_count.hpp"
#include "command_line.hpp"
#include "integer.hpp"

namespace po = boost::program_options;

namespace tune {
namespace {

std::size_t bytes_flag(const std::string& flag, const std::string& text) {
  std::string why;
  const auto n = strata_apps::parse_byte_count(text, why);
  if (!n) throw UsageError(fmt::format("{} = '{}': {}", flag, text, why));
  return *n;
}

long long integer_flag(const std::string& flag, const std::string& text, long long lo, long long hi) {
  const auto n = strata_apps::parse_integer(text, lo, hi);
  if (!n) throw UsageError(fmt::format("{} = '{}': expected an integer from {} to {}", flag, text, lo, hi));
  return *n;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return bytes == std::floor(bytes) ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::optional<Options> parse_options(int argc, char** argv, std::string* help_text) {
  Options o;
  std::string min_b = "8", max_b = "64M", factor = "4", iters = "20", min_iters = "5", warmup = "3", budget = "0", tie = "3";
  std::string plans, shards = "1,2", intra = "shm", nodes = "1..1024", rpn = "8", project_bytes = "64k,64M";
  po::options_description d(
      "strata-tune: measures strata's all_reduce plans on this layout and writes the best per size as a spec file\n"
      "for STRATA_SPEC_FILE (run under mpirun/srun on the layout you train on). docs/SCALING.md.\n"
      "Exit status: 0 written (and --verify met its target), 1 written but --verify missed the 5% target,\n"
      "2 bad command line, 3 strata/MPI error or an output that could not be written,\n"
      "130 interrupted (SIGINT/SIGTERM): the spec file holds the sizes measured before the interrupt.\n\nFlags");
  d.add_options()("help,h", "this text")
      ("minbytes,b", po::value(&min_b), "smallest size (default 8)")
      ("maxbytes,e", po::value(&max_b), "largest size (default 64M)")
      ("stepfactor,f", po::value(&factor), "size factor, 2 or 4 (default 4)")
      ("iters,n", po::value(&iters), "timed iterations per plan and size (default 20)")
      ("min-iters", po::value(&min_iters), "fewest iterations --budget may scale down to (default 5)")
      ("warmup_iters,w", po::value(&warmup), "untimed calls before timing (default 3)")
      ("budget", po::value(&budget), "seconds for the whole run: scales iterations down, then drops the largest sizes")
      ("tie", po::value(&tie), "percent: a winner within it of the neighbouring range's plan joins that range (default 3)")
      ("plans", po::value(&plans), "comma-separated candidate plans (default: every registered host algorithm, "
                                    "#M for --shards, and a/b pairs on several nodes)")
      ("shards", po::value(&shards), "shard counts tried where an algorithm uses them (default 1,2)")
      ("intra", po::value(&intra), "a of a/b: 'shm' (shared-memory algorithms, default) or 'all'")
      ("output,o", po::value(&o.output), "spec file to write (default strata.spec)")
      ("no-verify", "skip the verification pass")
      ("verify", "run the verification pass (default)")
      ("no-progress", "no progress lines on stderr")
      ("model", po::value(&o.model_path), "a .model file: print predicted next to measured times")
      ("calibrate", "measure the cost model's parameters and write --model-output")
      ("model-output", po::value(&o.model_output), "file --calibrate writes (default strata.model)")
      ("csv", po::value(&o.csv_path), "also write the measurements (or the projection) as CSV")
      ("project", "print the model's prediction for --nodes x --ranks-per-node with --network (one process)")
      ("network", po::value(&o.network), "--project: inter-node link as 'BANDWIDTH,LATENCY', e.g. '400Gb/s,2us'")
      ("ranks-per-node", po::value(&rpn), "--project: ranks per node (default 8)")
      ("nodes", po::value(&nodes), "--project: node range 'LO..HI', powers of 2 (default 1..1024)")
      ("bytes", po::value(&project_bytes), "--project: message sizes (default 64k,64M)");
  po::variables_map vm;
  if (!strata_apps::parse_command_line<UsageError>(argc, argv, d, vm, help_text)) return std::nullopt;
  o.min_bytes = bytes_flag("--minbytes", min_b);
  o.max_bytes = bytes_flag("--maxbytes", max_b);
  if (o.min_bytes == 0 || o.min_bytes > o.max_bytes)
    throw UsageError(fmt::format("--minbytes = {}: must be from 1 to --maxbytes ({})", o.min_bytes, o.max_bytes));
  o.step_factor = static_cast<std::size_t>(integer_flag("--stepfactor", factor, 2, 1 << 20));
  o.iters = static_cast<int>(integer_flag("--iters", iters, 1, 1000000));
  o.min_iters = static_cast<int>(integer_flag("--min-iters", min_iters, 1, 1000000));
  if (o.min_iters > o.iters) o.min_iters = o.iters;
  o.warmup = static_cast<int>(integer_flag("--warmup_iters", warmup, 0, 1000000));
  try {
    std::size_t used = 0;
    o.budget_seconds = std::stod(budget, &used);
    if (used != budget.size() || !std::isfinite(o.budget_seconds) || o.budget_seconds < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--budget = '{}': expected a finite number of seconds >= 0", budget));
  }
  try {
    std::size_t used = 0;
    o.tie = std::stod(tie, &used) / 100;
    if (used != tie.size() || !std::isfinite(o.tie) || o.tie < 0 || o.tie > 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--tie = '{}': expected a percentage from 0 to 100", tie));
  }
  o.plans = split(plans, ',');
  o.shards.clear();
  for (const auto& s : split(shards, ',')) o.shards.push_back(static_cast<int>(integer_flag("--shards", s, 1, 64)));
  if (o.shards.empty()) throw UsageError("--shards: expected a list such as 1,2");
  if (intra != "shm" && intra != "all") throw UsageError(fmt::format("--intra = '{}' is not one of: shm, all", intra));
  o.every_intra = intra == "all";
  if (o.output.empty()) throw UsageError("--output = '': expected a file name");
  o.verify = !vm.count("no-verify");
  o.progress = !vm.count("no-progress");
  if (vm.count("calibrate")) o.mode = Mode::calibrate;
  if (vm.count("project")) {
    if (o.mode == Mode::calibrate) throw UsageError("--calibrate and --project: choose one");
    o.mode = Mode::project;
    if (o.network.empty()) throw UsageError("--project needs --network 'BANDWIDTH,LATENCY' (e.g. '400Gb/s,2us')");
  }
  o.ranks_per_node = static_cast<int>(integer_flag("--ranks-per-node", rpn, 1, 1 << 20));
  const auto range = nodes.find("..");
  if (range == std::string::npos) {
    o.min_nodes = o.max_nodes = static_cast<int>(integer_flag("--nodes", nodes, 1, 1 << 20));
  } else {
    o.min_nodes = static_cast<int>(integer_flag("--nodes", nodes.substr(0, range), 1, 1 << 20));
    o.max_nodes = static_cast<int>(integer_flag("--nodes", nodes.substr(range + 2), o.min_nodes, 1 << 20));
  }
  o.project_bytes.clear();
  for (const auto& b : split(project_bytes, ',')) o.project_bytes.push_back(bytes_flag("--bytes", b));
  if (o.project_bytes.empty()) throw UsageError("--bytes: expected a list such as 64k,64M");
  return o;
}

}  // namespace tune
