// The spec file strata-tune writes: exactly what STRATA_SPEC_FILE reads
// (one spec line; `#` comments), with the evidence as comments: machine,
// topology, date, strata version, how it was measured, and per range the
// times behind the choice. Written by rank 0 under a temporary name and
// renamed, so a reader never sees half a file.
#pragma once

#include <string>
#include <vector>

#include "choice.hpp"
#include "sweep.hpp"

namespace tune {

// The facts about the run that the comments record.
struct Evidence {
  std::string hostname, cpu_model;
  int ranks = 0, nodes = 0;
  std::string ranks_per_node;  // "2", or "1..3" when nodes differ
  bool virtual_nodes = false;
  std::string date;            // UTC, ISO 8601
  std::string command;         // how strata-tune was invoked
  int warmup = 0;
  double tie = 0;              // merge_ranges' tie (the --tie fraction)
};

// The machine and date as this process sees them (hostname, /proc/cpuinfo's
// model name, the UTC time now). Local.
Evidence local_evidence();

// The file's text for `result` over `plans`: comments, then the spec. An
// empty string when no size was measured (there is no spec to write).
// `final` false: written after each size while the sweep runs, marked
// INCOMPLETE, so a run killed before it could say more (mpirun sends
// SIGKILL a second after SIGTERM) leaves a file that says so.
std::string spec_file_text(const Evidence& evidence, const SweepResult& result, const std::vector<std::string>& plans,
                           std::size_t planned_sizes, bool final);

// Writes `text` to `path` (temporary name, then rename). Returns an empty
// string, or why it could not (errno's words, with the path).
std::string write_file(const std::string& path, const std::string& text);

// The spec in a spec file's text, read as STRATA_SPEC_FILE reads it (the
// lines that are neither blank nor comments, joined); empty if none.
std::string spec_of_file_text(const std::string& text);

}  // namespace tune
