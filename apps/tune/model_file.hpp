// The .model file --calibrate writes and --model / --project read
// (docs/SCALING.md, "The .model file"): `#` comments (the evidence: machine,
// layout, date, how each figure was measured) and one `key = value` a line,
// alpha in microseconds, beta and gamma in nanoseconds per byte, for each
// link (shm, intra, inter) alpha_us, beta_ns_per_byte and
// beta_memory_ns_per_byte, then gamma_ns_per_byte, gamma_memory_ns_per_byte
// and cache_bytes (the regimes' boundary):
//
//   shm.alpha_us = 0.43
//   shm.beta_ns_per_byte = 0.2
//   ...
//   cache_bytes = 2097152
#pragma once

#include <stdexcept>
#include <string>

#include "model.hpp"

namespace tune {

// A .model file that cannot be read or says something unexpected: the
// message names the file, the line and what is wrong.
class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The file's text: `comments` first (each line prefixed "# "), then the
// twelve parameters.
std::string model_text(const Machine& machine, const std::string& comments);

// Parses a .model file's text (`name` for messages). Every parameter must be
// present exactly once, finite and >= 0; unknown keys are errors.
// Throws ModelFileError.
Machine parse_model(const std::string& text, const std::string& name);

// Reads and parses the file at `path`. Throws ModelFileError.
Machine read_model_file(const std::string& path);

}  // namespace tune
