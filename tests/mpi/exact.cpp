#include "exact.hpp"

#include <doctest/doctest.h>

#include "reference.hpp"

namespace strata::test {

void check_exact_all_reduce(Communicator& comm, const std::string& label, const Buffer& input,
                            const Buffer& expected, ReduceOp op, bool in_place, const CommunicationOptions& options,
                            SameBitsLog& log) {
  Buffer in(input.count, input.dtype), out(input.count, input.dtype);
  in.copy_from(input);
  Buffer& result = in_place ? in : out;
  try {
    comm.all_reduce(in.tensor(), result.tensor(), op, options);
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return;
  }
  const std::string diff = describe_difference(result.data(), expected.data(), input.count, input.dtype);
  CHECK_MESSAGE(diff.empty(), label << ": " << diff);
  if (!in_place)
    CHECK_MESSAGE(first_difference(in.data(), input.data(), input.count, input.dtype) == input.count,
                  label << ": out-of-place all_reduce modified its input");
  log.add(label, result.data(), result.size_bytes());
}

}  // namespace strata::test
