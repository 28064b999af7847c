// Command-line parsing with Boost.Program_options. Values are read as text
// and converted here, so that "-5", "1e9" or "12q" are refused with a clear
// message instead of wrapping around or being half-read.
#include "options.hpp"

#include "byte_count.hpp"
#include "integer.hpp"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cctype>
#include <sstream>

namespace po = boost::program_options;

namespace kernels_app {
namespace {

constexpr std::size_t kMinBytes = 1024;
constexpr int kMaxIters = 1000000;

// --bytes: a byte count (apps/common/byte_count.hpp) of at least kMinBytes.
std::size_t parse_bytes(const std::string& text) {
  const auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("--bytes = '{}': {}; expected a byte count such as 1048576, 64M or 1G", text, why));
  };
  std::string why;
  const auto bytes = strata_apps::parse_byte_count(text, why);
  if (!bytes) throw bad(why);
  if (*bytes < kMinBytes) throw bad("below 1024 (pack/unpack splits the buffer into 64 tensors of 16-byte multiples)");
  return *bytes;
}

int parse_iters(const std::string& text) {
  const std::optional<long long> value = strata_apps::parse_integer(text, 1, kMaxIters);
  if (!value) throw UsageError(fmt::format("--iters = '{}': expected a whole number from 1 to {}", text, kMaxIters));
  return static_cast<int>(*value);
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, std::string* help) {
  po::options_description desc(
      "strata-gpu-kernels: bandwidth of strata's CUDA kernels (reduce, MEAN divide, pack/unpack) next to a\n"
      "device-to-device cudaMemcpy measured in the same run, on the current CUDA device.\n"
      "Exit status: 0 measured (whatever the verdict), 2 bad command line, 3 CUDA error,\n"
      "77 skipped: no usable CUDA device.\n\nOptions");
  std::string bytes = "256M", iters = "20";
  desc.add_options()
      ("help,h", "print this help and exit")
      ("bytes", po::value<std::string>(&bytes)->value_name("N"),
       "bytes per buffer, k/M/G = 1024^n, at least 1k (default 256M)")
      ("iters", po::value<std::string>(&iters)->value_name("N"), "timed launches per kernel, 1 to 1000000 (default 20)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional({}).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << desc << "\n";
    *help = text.str();
    return std::nullopt;
  }
  Options options;
  options.bytes = parse_bytes(bytes);
  options.iters = parse_iters(iters);
  return options;
}

}  // namespace kernels_app
