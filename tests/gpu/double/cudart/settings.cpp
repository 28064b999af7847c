#include "settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace gpu_double {
namespace {

[[noreturn]] void bad(const char* name, const char* text, const char* expected) {
  std::fprintf(stderr, "strata test double: %s = '%s': expected %s\n", name, text, expected);
  std::abort();
}

long long integer(const char* name, long long fallback, long long low, long long high) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < low || value > high) bad(name, text, "a whole number in range");
  return value;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* text = std::getenv(name); text && *text) return std::atoi(text);
  return 0;
}

Settings read() {
  Settings s;
  s.devices = int(integer("STRATA_FAKE_GPUS", 0, 0, 16));
  if (const char* modes = std::getenv("STRATA_FAKE_COMPUTE_MODES"); modes && *modes) {
    std::string_view rest(modes);
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string item(rest.substr(0, comma));
      if (item != "0" && item != "1" && item != "2" && item != "3") bad("STRATA_FAKE_COMPUTE_MODES", modes, "0-3 per device");
      s.compute_modes.push_back(std::atoi(item.c_str()));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  s.memory_bytes = std::size_t(integer("STRATA_FAKE_MEMORY_MB", 4096, 1, 1 << 20)) << 20;
  s.seed = std::uint64_t(integer("STRATA_FAKE_SEED", 1, 0, (1ll << 62)));
  s.delay_us = unsigned(integer("STRATA_FAKE_DELAY_US", 40, 0, 1000000));
  s.hang_seconds = double(integer("STRATA_FAKE_HANG_SECONDS", 60, 1, 100000));
  if (const char* faults = std::getenv("STRATA_FAKE_FAULTS")) s.faults = faults;
  s.trace = integer("STRATA_FAKE_TRACE", 0, 0, 1) == 1;
  s.world_rank = launcher_rank();
  return s;
}

}  // namespace

const Settings& settings() {
  static const Settings s = read();
  return s;
}

}  // namespace gpu_double
