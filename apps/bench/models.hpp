// Gradient tensor lists of well-known models, derived from their published
// layer shapes (not from a table of numbers), for --collective batch.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

struct ParameterTensor {
  std::string name;   // as the reference implementation names it
  std::size_t count;  // elements
};

struct Model {
  std::string_view name;
  std::string_view source;  // paper and reference implementation followed
  std::vector<ParameterTensor> tensors;

  std::size_t parameters() const;
};

// nullptr when `name` is not a known model.
const Model* find_model(std::string_view name);

// "resnet50, bert-large, gpt2-small": for messages and --help.
std::string model_names();

}  // namespace bench
