// Names and sizes of the public enums.
#include <array>
#include <fmt/format.h>

#include "strata/errors.hpp"
#include "strata/types.hpp"
#include "util/element.hpp"
#include "util/where.hpp"

namespace strata {
namespace {

constexpr std::array<std::string_view, 10> kDtypeNames = {"f32", "f64", "f16", "bf16", "i8",
                                                         "u8",  "i32", "u32", "i64",  "u64"};
constexpr std::array<std::string_view, 5> kOpNames = {"sum", "mean", "min", "max", "prod"};

template <typename Enum, std::size_t N>
Enum parse_name(std::string_view text, std::string_view field, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  std::string choices;
  for (auto n : names) choices += fmt::format("{}{}", choices.empty() ? "" : ", ", n);
  throw InvalidArgument(util::located(fmt::format("{} = '{}' is not one of: {}", field, text, choices)));
}

}  // namespace

std::size_t dtype_size(DataType dtype) {
  if (static_cast<std::size_t>(dtype) >= kDtypeNames.size())
    throw std::out_of_range(fmt::format("dtype_size: {} is not a DataType", static_cast<int>(dtype)));
  return util::element_bytes(dtype);
}
std::size_t Tensor::bytes() const { return count * dtype_size(dtype); }

std::string_view to_string(DataType dtype) { return kDtypeNames.at(static_cast<std::size_t>(dtype)); }
std::string_view to_string(ReduceOp op) { return kOpNames.at(static_cast<std::size_t>(op)); }

std::string_view to_string(Implementation implementation) {
  switch (implementation) {
    case Implementation::automatic: return "automatic";
    case Implementation::ring: return "ring";
    case Implementation::nccl: return "nccl";
  }
  return "?";
}

std::string_view to_string(Memory memory) { return memory == Memory::host ? "host" : "cuda"; }

std::string_view to_string(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce: return "reduce";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
  }
  return "?";
}

DataType parse_dtype(std::string_view text, std::string_view field) {
  return parse_name<DataType>(text, field, kDtypeNames);
}
ReduceOp parse_reduce_op(std::string_view text, std::string_view field) {
  return parse_name<ReduceOp>(text, field, kOpNames);
}

}  // namespace strata
