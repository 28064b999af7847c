// api::validate_*: the validate stage must reject every bad argument with
// strata::InvalidArgument whose message names the field and the value, and
// accept the legal edge cases (count 0 with null data, in place, 0 options).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "check_throws.hpp"
#include "api/validate.hpp"
#include "strata/errors.hpp"

using strata::test::check_throws_naming;
namespace api = strata::api;
using strata::CommunicationOptions;
using strata::DataType;
using strata::InvalidArgument;
using strata::Tensor;

TEST_CASE("validate_options accepts the defaults and boundary values") {
  CHECK_NOTHROW(api::validate_options({}));
  CHECK_NOTHROW(api::validate_options({.bytes_per_pack = 0, .timeout_seconds = 0}));
  CHECK_NOTHROW(api::validate_options({.bytes_per_pack = 1, .timeout_seconds = 1e-9}));
  CHECK_NOTHROW(api::validate_options({.implementation = strata::Implementation::nccl}));
}

TEST_CASE("validate_options rejects negative bytes_per_pack, naming field and value") {
  check_throws_naming<InvalidArgument>([] { api::validate_options({.bytes_per_pack = -1}); },
                                       {"bytes_per_pack", "-1"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.bytes_per_pack = std::numeric_limits<long long>::min()}); },
      {"bytes_per_pack", "-9223372036854775808"});
}

TEST_CASE("validate_options rejects negative, NaN and infinite timeouts") {
  check_throws_naming<InvalidArgument>([] { api::validate_options({.timeout_seconds = -1.5}); },
                                       {"timeout_seconds", "-1.5"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.timeout_seconds = std::numeric_limits<double>::quiet_NaN()}); },
      {"timeout_seconds", "NaN"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.timeout_seconds = std::numeric_limits<double>::infinity()}); },
      {"timeout_seconds", "inf"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.timeout_seconds = -std::numeric_limits<double>::infinity()}); },
      {"timeout_seconds", "-inf"});
}

TEST_CASE("validate_options and validate_op reject out-of-range enum values") {
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.implementation = static_cast<strata::Implementation>(7)}); },
      {"implementation", "7"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_options({.implementation = static_cast<strata::Implementation>(-1)}); },
      {"implementation", "-1"});
  check_throws_naming<InvalidArgument>([] { api::validate_op(static_cast<strata::ReduceOp>(5)); }, {"op", "5"});
  check_throws_naming<InvalidArgument>([] { api::validate_op(static_cast<strata::ReduceOp>(-3)); }, {"op", "-3"});
  for (int op = 0; op <= 4; ++op) CHECK_NOTHROW(api::validate_op(static_cast<strata::ReduceOp>(op)));
}

TEST_CASE("validate_tensor: dtype, memory, null data and count overflow") {
  float x[4] = {};
  CHECK_NOTHROW(api::validate_tensor({x, 4, DataType::f32}, "in"));
  // count 0 is legal and still collective, so null data is fine there.
  CHECK_NOTHROW(api::validate_tensor({nullptr, 0, DataType::f32}, "in"));
  // Non-root outputs of reduce may be null.
  CHECK_NOTHROW(api::validate_tensor({nullptr, 4, DataType::f32}, "out", /*data_required=*/false));

  check_throws_naming<InvalidArgument>([] { api::validate_tensor({nullptr, 5, DataType::f32}, "in"); },
                                       {"in.data", "null", "count = 5"});
  check_throws_naming<InvalidArgument>(
      [] { api::validate_tensor({nullptr, 3, DataType::i8}, "tensors[2]"); }, {"tensors[2].data", "3"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, 4, static_cast<DataType>(10)}, "in"); }, {"in.dtype", "10"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, 4, static_cast<DataType>(-1)}, "out"); }, {"out.dtype", "-1"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, 4, DataType::f32, static_cast<strata::Memory>(9)}, "in"); },
      {"in.memory", "9"});
  // A count whose byte size does not fit in size_t must not wrap around.
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, std::numeric_limits<std::size_t>::max() / 2, DataType::f64}, "in"); },
      {"in.count", std::to_string(std::numeric_limits<std::size_t>::max() / 2)});
  // PTRDIFF_MAX bytes (fits size_t and ptrdiff_t) on a real pointer ends
  // past any address a process can have: no such buffer exists, host or CUDA.
  const std::size_t ptrdiff_max_bytes = std::numeric_limits<std::size_t>::max() / 2;
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, ptrdiff_max_bytes, DataType::u8}, "in"); },
      {"in.", std::to_string(ptrdiff_max_bytes), "cannot be a buffer"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, ptrdiff_max_bytes, DataType::u8, strata::Memory::cuda, 0}, "in"); },
      {"in.", "cannot be a buffer"});
  // The largest buffer the address space allows is still a buffer.
  CHECK_NOTHROW(api::validate_tensor({reinterpret_cast<void*>(4096), api::kMaxBufferBytes - 4096, DataType::u8}, "in"));
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({reinterpret_cast<void*>(4096), api::kMaxBufferBytes - 4095, DataType::u8}, "in"); },
      {"in.data", "cannot be a buffer"});
}

TEST_CASE("validate_tensor: CUDA tensors are checked for shape here; device availability is the backend's") {
  float x[1] = {};
  CHECK_NOTHROW(api::validate_tensor({x, 1, DataType::f32, strata::Memory::cuda, 0}, "in"));
  CHECK_NOTHROW(api::validate_tensor({x, 1, DataType::f32, strata::Memory::cuda, -1}, "in"));
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({x, 1, DataType::f32, strata::Memory::cuda, -2}, "in"); }, {"in.device", "-2"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_tensor({nullptr, 3, DataType::f32, strata::Memory::cuda, 0}, "in"); }, {"in.data", "3"});
  check_throws_naming<InvalidArgument>(
      [&] {
        api::validate_in_out({x, 1, DataType::f32, strata::Memory::host}, {x, 1, DataType::f32, strata::Memory::cuda, 0});
      },
      {"out.memory", "cuda", "host"});
}

TEST_CASE("validate_in_out: same buffer or disjoint; count and dtype must agree") {
  std::vector<float> buf(16);
  float* p = buf.data();
  CHECK_NOTHROW(api::validate_in_out({p, 8, DataType::f32}, {p, 8, DataType::f32}));      // in place
  CHECK_NOTHROW(api::validate_in_out({p, 8, DataType::f32}, {p + 8, 8, DataType::f32}));  // adjacent
  CHECK_NOTHROW(api::validate_in_out({p + 8, 8, DataType::f32}, {p, 8, DataType::f32}));  // adjacent, swapped
  CHECK_NOTHROW(api::validate_in_out({p, 0, DataType::f32}, {p + 1, 0, DataType::f32}));  // empty never overlaps

  char in_text[32], out_text[32];
  std::snprintf(in_text, sizeof in_text, "%p", static_cast<void*>(p));
  std::snprintf(out_text, sizeof out_text, "%p", static_cast<void*>(p + 1));
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_in_out({p, 8, DataType::f32}, {p + 1, 8, DataType::f32}); },
      {"in.data", "out.data", "overlap", in_text, out_text});
  // Overlap by a single byte at the end counts too.
  check_throws_naming<InvalidArgument>(
      [&] {
        auto* bytes = reinterpret_cast<char*>(p);
        api::validate_in_out({bytes, 8, DataType::u8}, {bytes + 7, 8, DataType::u8});
      },
      {"overlap"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_in_out({p, 8, DataType::f32}, {p + 8, 7, DataType::f32}); }, {"out.count = 7", "8"});
  check_throws_naming<InvalidArgument>(
      [&] { api::validate_in_out({p, 4, DataType::f32}, {p + 8, 4, DataType::i32}); }, {"out.dtype", "i32", "f32"});
}

TEST_CASE("validate_root: [0, size)") {
  CHECK_NOTHROW(api::validate_root(0, 1));
  CHECK_NOTHROW(api::validate_root(7, 8));
  check_throws_naming<InvalidArgument>([] { api::validate_root(-1, 4); }, {"root = -1", "4"});
  check_throws_naming<InvalidArgument>([] { api::validate_root(4, 4); }, {"root = 4", "4"});
  check_throws_naming<InvalidArgument>([] { api::validate_root(1000, 3); }, {"root = 1000"});
}
