#include "spec_file.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "options.hpp"
#include "strata/version.hpp"

namespace tune {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown (no model name in /proc/cpuinfo)";
}

std::string plan_times(const Winner& w, const std::vector<std::string>& plans) {
  std::string text = fmt::format("{:>10}: {} {:.2f} us", human_bytes(double(w.bytes)), plans[std::size_t(w.best)], w.best_us);
  if (w.runner_up >= 0)
    text += fmt::format(", runner-up {} {:.2f} us ({:+.1f}%)", plans[std::size_t(w.runner_up)], w.runner_up_us,
                        100 * w.margin());
  return text;
}

}  // namespace

Evidence local_evidence() {
  Evidence e;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  e.hostname = host;
  e.cpu_model = cpu_model();
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  e.date = date;
  return e;
}

std::string spec_file_text(const Evidence& e, const SweepResult& r, const std::vector<std::string>& plans,
                           std::size_t planned_sizes, bool final) {
  const std::vector<Range> ranges = merge_ranges(r.sizes, e.tie);
  if (ranges.empty()) return "";
  int fewest = 0, most = 0;
  for (const auto& per_size : r.iterations)
    for (int n : per_size) {
      fewest = fewest == 0 ? n : std::min(fewest, n);
      most = std::max(most, n);
    }
  std::string t;
  t += "# strata all_reduce spec written by strata-tune: load it with STRATA_SPEC_FILE=<this file>\n";
  t += fmt::format("# machine: {} ({})\n", e.hostname, e.cpu_model);
  t += fmt::format("# topology: {} ranks, nodes: {}, ranks per node: {}{}\n", e.ranks, e.nodes, e.ranks_per_node,
                   e.virtual_nodes ? " (virtual nodes: STRATA_RANKS_PER_NODE)" : "");
  t += fmt::format("# date: {}\n# strata: {}\n", e.date, strata::version);
  if (!e.command.empty()) t += fmt::format("# command: {}\n", e.command);
  t += fmt::format("# measured: f32 sum, {} sizes {} .. {}, {} plans, {} warm-up and {}..{} timed calls per plan and size;\n",
                   r.sizes.size(), human_bytes(double(r.sizes.front().bytes)), human_bytes(double(r.sizes.back().bytes)),
                   plans.size(), e.warmup, fewest, most);
  t += "#   time = median over iterations of the slowest rank (as strata-bench); margin = runner-up / best - 1\n";
  t += fmt::format("#   a size whose winner beats its range's plan by less than {:.0f}% stays in the range (negative margin)\n",
                   100 * e.tie);
  t += fmt::format("# plans: {}\n", fmt::join(plans, " "));
  if (r.interrupted)
    t += fmt::format("# INCOMPLETE: interrupted after {} of {} sizes; larger messages take the last range\n",
                     r.sizes.size(), planned_sizes);
  else if (!final)
    t += fmt::format("# INCOMPLETE: {} of {} sizes measured so far (the run was stopped before it finished, or is "
                     "still running); larger messages take the last range\n",
                     r.sizes.size(), planned_sizes);
  if (!r.dropped.empty())
    t += fmt::format("# dropped for --budget: {} sizes, {} .. {}; larger messages take the last range\n", r.dropped.size(),
                     human_bytes(double(r.dropped.front())), human_bytes(double(r.dropped.back())));
  for (const Range& range : ranges) {
    const std::size_t lo = range.evidence.front().bytes, hi = range.evidence.back().bytes;
    t += fmt::format("# {} for {}: measured {} .. {}\n", plans[std::size_t(range.plan)],
                     range.limit < 0 ? "the rest" : fmt::format("messages up to {} B", range.limit), human_bytes(double(lo)),
                     human_bytes(double(hi)));
    for (const Winner& w : range.evidence) t += "#   " + plan_times(w, plans) + "\n";
  }
  t += spec_text(ranges, plans) + "\n";
  return t;
}

std::string write_file(const std::string& path, const std::string& text) {
  const std::string temporary = fmt::format("{}.partial.{}", path, getpid());
  std::FILE* f = std::fopen(temporary.c_str(), "w");
  if (!f) return fmt::format("cannot write '{}': {}", temporary, std::strerror(errno));
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !wrote) {
    const std::string why = std::strerror(wrote ? errno : write_errno);
    std::remove(temporary.c_str());
    return fmt::format("cannot write '{}': {}", path, why);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    return fmt::format("cannot rename '{}' to '{}': {}", temporary, path, why);
  }
  return "";
}

std::string spec_of_file_text(const std::string& text) {
  // As lib/plan/choose.cpp reads STRATA_SPEC_FILE: every line that is not
  // blank or a comment, leading blanks dropped, joined.
  std::string spec;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    spec += line.substr(first);
  }
  return spec;
}

}  // namespace tune
