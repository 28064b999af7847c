// One parameter per line so that a person can read, diff and edit a
// calibration; the units are in the key so the numbers need no legend.
#include "strata/cost_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace strata::model {
namespace {

// key -> (where the value goes, unit factor from the file's unit to seconds)
struct Slot {
  double* value;
  double to_seconds;
};

std::map<std::string, Slot> slots(Machine& m) {
  return {{"shm.alpha_us", {&m.shm.alpha, 1e-6}},
          {"shm.beta_ns_per_byte", {&m.shm.beta, 1e-9}},
          {"shm.beta_memory_ns_per_byte", {&m.shm.beta_memory, 1e-9}},
          {"intra.alpha_us", {&m.intra.alpha, 1e-6}},
          {"intra.beta_ns_per_byte", {&m.intra.beta, 1e-9}},
          {"intra.beta_memory_ns_per_byte", {&m.intra.beta_memory, 1e-9}},
          {"inter.alpha_us", {&m.inter.alpha, 1e-6}},
          {"inter.beta_ns_per_byte", {&m.inter.beta, 1e-9}},
          {"inter.beta_memory_ns_per_byte", {&m.inter.beta_memory, 1e-9}},
          {"gamma_ns_per_byte", {&m.gamma, 1e-9}},
          {"gamma_memory_ns_per_byte", {&m.gamma_memory, 1e-9}},
          {"cache_bytes", {&m.cache_bytes, 1}},
          {"mpi_scale", {&m.mpi_scale, 1}},
          {"mpi_scale_memory", {&m.mpi_scale_memory, 1}},
          {"shm_direct_scale", {&m.shm_direct_scale, 1}}};
}

// Keys a file may leave out (their Machine default stands), and that must be
// above 0: factors, not costs.
bool optional_factor(const std::string& key) {
  return key == "mpi_scale" || key == "mpi_scale_memory" || key == "shm_direct_scale";
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::string model_text(const Machine& machine, const std::string& comments) {
  std::string text;
  std::istringstream lines(comments);
  for (std::string line; std::getline(lines, line);) text += line.empty() ? "#\n" : "# " + line + "\n";
  Machine copy = machine;
  // Fixed order, the one docs/SCALING.md shows.
  for (const char* key : {"shm.alpha_us", "shm.beta_ns_per_byte", "shm.beta_memory_ns_per_byte", "intra.alpha_us",
                          "intra.beta_ns_per_byte", "intra.beta_memory_ns_per_byte", "inter.alpha_us",
                          "inter.beta_ns_per_byte", "inter.beta_memory_ns_per_byte", "gamma_ns_per_byte",
                          "gamma_memory_ns_per_byte", "cache_bytes", "mpi_scale", "mpi_scale_memory",
                          "shm_direct_scale"}) {
    const Slot slot = slots(copy).at(key);
    text += fmt::format("{} = {:.10g}\n", key, *slot.value / slot.to_seconds);
  }
  return text;
}

Machine parse_model(const std::string& text, const std::string& name) {
  Machine machine;
  auto table = slots(machine);
  std::map<std::string, int> seen;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    const std::string body = trim(line.substr(0, line.find('#')));
    if (body.empty()) continue;
    const auto where = fmt::format("{}:{}", name, number);
    const auto equals = body.find('=');
    if (equals == std::string::npos) throw ModelFileError(fmt::format("{}: expected 'key = value', got '{}'", where, body));
    const std::string key = trim(body.substr(0, equals));
    const std::string value_text = trim(body.substr(equals + 1));
    const auto slot = table.find(key);
    if (slot == table.end()) throw ModelFileError(fmt::format("{}: unknown key '{}'", where, key));
    if (seen[key]++) throw ModelFileError(fmt::format("{}: '{}' given twice", where, key));
    double value = 0;
    std::size_t used = 0;
    try {
      value = std::stod(value_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value_text.size() || !std::isfinite(value) || value < 0)
      throw ModelFileError(fmt::format("{}: {} = '{}': expected a finite number >= 0", where, key, value_text));
    if (optional_factor(key) && value == 0)
      throw ModelFileError(fmt::format("{}: {} = '{}': expected a factor > 0", where, key, value_text));
    *slot->second.value = value * slot->second.to_seconds;
  }
  for (const auto& [key, slot] : table)
    if (!seen.count(key) && !optional_factor(key)) throw ModelFileError(fmt::format("{}: '{}' is missing", name, key));
  return machine;
}

Machine read_model_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw ModelFileError(fmt::format("model file '{}' cannot be read", path));
  std::stringstream text;
  text << file.rdbuf();
  return parse_model(text.str(), path);
}

}  // namespace strata::model
