// strata-tune's command line, parsed once into a plain value (--help and
// docs/SCALING.md list the flags).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tune {

enum class Mode { tune, calibrate, project };

struct Options {
  Mode mode = Mode::tune;
  // Sizes: min, min*f, ... <= max (bytes per rank, f32 sum).
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 64ull << 20;
  std::size_t step_factor = 4;
  int iters = 20;      // most timed iterations per plan and size
  int min_iters = 5;   // fewest, when --budget scales them down
  int warmup = 3;
  double budget_seconds = 0;   // 0: none
  double tie = 0.03;           // a size's winner must beat its neighbour's plan by more to start a range
  std::vector<std::string> plans;  // explicit candidates; empty: from the registry
  std::vector<int> shards = {1, 2};
  bool every_intra = false;    // --intra all: every host algorithm as a, not only shared-memory ones
  std::string output = "strata.spec";
  bool verify = true;
  bool progress = true;
  std::string model_path;      // --model: predictions next to measurements; --project's node parameters
  std::string model_output = "strata.model";  // --calibrate writes it
  std::string csv_path;        // per (plan, size) measurements, or the projection
  // --project
  std::string network;         // "400Gb/s,2us"
  int ranks_per_node = 8;
  int min_nodes = 1, max_nodes = 1024;
  std::vector<std::size_t> project_bytes = {64 * 1024, 64ull << 20};
};

// A bad flag or value: main prints `what()` on one line and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv. nullopt when --help was asked for (the text in *help_text);
// throws UsageError for anything it cannot accept.
std::optional<Options> parse_options(int argc, char** argv, std::string* help_text);

// "64 MiB", "512 B": for progress lines and comments.
std::string human_bytes(double bytes);

}  // namespace tune
