// The .model file --calibrate writes and --model / --project read
// (docs/SCALING.md, "The .model file"): `#` comments (the evidence: machine,
// layout, date, how each figure was measured) and one `key = value` a line,
// alpha in microseconds, beta and gamma in nanoseconds per byte:
//
//   shm.alpha_us = 0.9          intra.alpha_us = 0.6      inter.alpha_us = 0.6
//   shm.beta_ns_per_byte = 0.1  intra.beta_ns_per_byte = 0.12 ...
//   gamma_ns_per_byte = 0.15
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
// seven parameters.
std::string model_text(const Machine& machine, const std::string& comments);

// Parses a .model file's text (`name` for messages). Every parameter must be
// present exactly once, finite and >= 0; unknown keys are errors.
// Throws ModelFileError.
Machine parse_model(const std::string& text, const std::string& name);

// Reads and parses the file at `path`. Throws ModelFileError.
Machine read_model_file(const std::string& path);

}  // namespace tune
