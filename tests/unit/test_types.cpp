// strata/types.hpp: dtype sizes and names, and the name parsers that
// command-line flags go through (round trip, and errors naming the text).
#include <doctest/doctest.h>

#include <string>

#include "check_throws.hpp"
#include "strata/errors.hpp"
#include "strata/types.hpp"

using namespace strata;

namespace {
struct DtypeRow {
  DataType dtype;
  const char* name;
  std::size_t size;
};
constexpr DtypeRow kDtypes[] = {
    {DataType::f32, "f32", 4}, {DataType::f64, "f64", 8}, {DataType::f16, "f16", 2}, {DataType::bf16, "bf16", 2},
    {DataType::i8, "i8", 1},   {DataType::u8, "u8", 1},   {DataType::i32, "i32", 4}, {DataType::u32, "u32", 4},
    {DataType::i64, "i64", 8}, {DataType::u64, "u64", 8},
};
}  // namespace

TEST_CASE("dtype sizes, names and parse round trip") {
  for (const DtypeRow& row : kDtypes) {
    CAPTURE(row.name);
    CHECK(dtype_size(row.dtype) == row.size);
    CHECK(to_string(row.dtype) == row.name);
    CHECK(parse_dtype(row.name) == row.dtype);
  }
  Tensor t{nullptr, 3, DataType::f64};
  CHECK(t.bytes() == 24);
  CHECK(Tensor{nullptr, 0, DataType::bf16}.bytes() == 0);
}

TEST_CASE("reduce op names and parse round trip") {
  const std::pair<ReduceOp, const char*> ops[] = {
      {ReduceOp::sum, "sum"}, {ReduceOp::mean, "mean"}, {ReduceOp::min, "min"}, {ReduceOp::max, "max"},
      {ReduceOp::prod, "prod"}};
  for (auto [op, name] : ops) {
    CAPTURE(name);
    CHECK(to_string(op) == name);
    CHECK(parse_reduce_op(name) == op);
  }
  CHECK(to_string(Implementation::automatic) == "automatic");
  CHECK(to_string(Implementation::ring) == "ring");
  CHECK(to_string(Implementation::nccl) == "nccl");
  CHECK(to_string(Memory::host) == "host");
  CHECK(to_string(Memory::cuda) == "cuda");
}

TEST_CASE("parsers reject unknown names, naming the field and the text") {
  strata::test::check_throws_naming<InvalidArgument>([] { parse_dtype("float32"); }, {"dtype", "'float32'", "f32"});
  strata::test::check_throws_naming<InvalidArgument>([] { parse_dtype("F32", "--type"); }, {"--type", "'F32'"});
  strata::test::check_throws_naming<InvalidArgument>([] { parse_dtype(""); }, {"dtype", "''"});
  strata::test::check_throws_naming<InvalidArgument>([] { parse_reduce_op("avg", "--op"); }, {"--op", "'avg'", "mean"});
}
