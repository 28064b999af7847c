// strata-topo's command line.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace topo_app {

// A bad command line: one line on stderr, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::vector<std::size_t> sizes;  // all-reduce sizes to show the plan for, in bytes
  std::string spec;                // --spec; empty = STRATA_SPEC / STRATA_SPEC_FILE / auto
  bool json = false;
};

// "64k" -> 65536: digits with an optional k, M or G (powers of 1024; "kb",
// "kib" also accepted). Throws UsageError.
std::size_t parse_size(const std::string& text);

// "8,4k,1M" -> sizes. Throws UsageError.
std::vector<std::size_t> parse_sizes(const std::string& list);

// "4k" for 4096: the shortest exact spelling with a k/M/G suffix.
std::string format_size(std::size_t bytes);

// nullopt after --help (the help text is in *help). Throws UsageError.
std::optional<Options> parse_options(int argc, char** argv, std::string* help);

}  // namespace topo_app
