// strata-gpu-kernels' command line.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace kernels_app {

// A bad command line: one line on stderr, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::size_t bytes = std::size_t(256) << 20;  // per buffer, rounded down to 16 bytes
  int iters = 20;                              // timed launches per kernel (after one warm-up)
};

// nullopt after --help (the help text is in *help). Throws UsageError for a
// flag it does not know, a missing value, or a value that is not a number
// in range (--bytes >= 1 KiB: 64 tensors of 16 bytes for pack/unpack;
// --iters 1 to 1000000).
std::optional<Options> parse_options(int argc, char** argv, std::string* help);

}  // namespace kernels_app
