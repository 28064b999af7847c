// Command-line parsing with Boost.Program_options.
#include "options.hpp"

#include "byte_count.hpp"
#include "command_line.hpp"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cctype>
#include <sstream>

namespace po = boost::program_options;

namespace topo_app {

constexpr const char* kDefaultSizes = "8,1k,64k,1M,16M,256M";

std::size_t parse_size(const std::string& text) {
  std::string why;
  if (const auto bytes = strata_apps::parse_byte_count(text, why)) return *bytes;
  throw UsageError(fmt::format("'{}': {}", text, why));
}

std::vector<std::size_t> parse_sizes(const std::string& list) {
  std::vector<std::size_t> sizes;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      sizes.push_back(parse_size(item));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--sizes: {}", e.what()));
    }
  }
  if (sizes.empty() || list.ends_with(',')) throw UsageError(fmt::format("--sizes = '{}': expected a list such as 8,4k,1M", list));
  return sizes;
}

std::string format_size(std::size_t bytes) {
  static constexpr const char* kSuffix[] = {"", "k", "M", "G"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", bytes, kSuffix[unit]);
}

std::optional<Options> parse_options(int argc, char** argv, std::string* help) {
  po::options_description desc(
      "strata-topo: print the node topology strata sees and the all-reduce plan for a list of sizes.\n"
      "Run it like the application, e.g. `mpirun -n 8 strata-topo`; rank 0 prints.\n"
      "Honours STRATA_SPEC, STRATA_SPEC_FILE and STRATA_RANKS_PER_NODE.\n"
      "Exit status: 0 ok, 2 bad command line or spec, 3 other error.\n\nOptions");
  std::string sizes = kDefaultSizes;
  Options options;
  desc.add_options()
      ("help,h", "print this help and exit")
      ("sizes,s", po::value<std::string>(&sizes)->value_name("LIST"),
       "comma-separated all-reduce sizes in bytes, k/M/G = 1024^n (default 8,1k,64k,1M,16M,256M)")
      ("spec", po::value<std::string>(&options.spec)->value_name("SPEC"),
       "all_reduce_spec to plan with, e.g. tree:4k:xring (default: STRATA_SPEC, else STRATA_SPEC_FILE, else auto)")
      ("json", po::bool_switch(&options.json), "print one JSON object instead of text");
  po::variables_map vm;
  if (!strata_apps::parse_command_line<UsageError>(argc, argv, desc, vm, help)) return std::nullopt;
  options.sizes = parse_sizes(sizes);
  return options;
}

}  // namespace topo_app
