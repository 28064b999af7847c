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

void check_exact_reduce(Communicator& comm, const std::string& label, const Buffer& input, const Buffer& expected,
                        ReduceOp op, int root, bool in_place, bool null_out_off_root,
                        const CommunicationOptions& options) {
  const bool is_root = comm.rank() == root;
  Buffer in(input.count, input.dtype), out(input.count, input.dtype);
  in.copy_from(input);
  Tensor out_tensor = in_place ? in.tensor() : out.tensor();
  if (!in_place && !is_root && null_out_off_root) out_tensor.data = nullptr;
  try {
    comm.reduce(in.tensor(), out_tensor, op, root, options);
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return;
  }
  if (is_root) {
    const Buffer& result = in_place ? in : out;
    const std::string diff = describe_difference(result.data(), expected.data(), input.count, input.dtype);
    CHECK_MESSAGE(diff.empty(), label << ": " << diff);
  } else if (!in_place && out_tensor.data != nullptr) {
    Buffer untouched(input.count, input.dtype);  // the same garbage pattern
    CHECK_MESSAGE(first_difference(out.data(), untouched.data(), input.count, input.dtype) == input.count,
                  label << ": reduce wrote into a non-root's out buffer");
  }
  if (!in_place)
    CHECK_MESSAGE(first_difference(in.data(), input.data(), input.count, input.dtype) == input.count,
                  label << ": out-of-place reduce modified its input");
}

void check_exact_broadcast(Communicator& comm, const std::string& label, const Buffer& sent, int root,
                           const CommunicationOptions& options, SameBitsLog& log) {
  Buffer buffer(sent.count, sent.dtype);
  if (comm.rank() == root) buffer.copy_from(sent);
  try {
    comm.broadcast(buffer.tensor(), root, options);
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return;
  }
  const std::string diff = describe_difference(buffer.data(), sent.data(), sent.count, sent.dtype);
  CHECK_MESSAGE(diff.empty(), label << ": " << diff);
  log.add(label, buffer.data(), buffer.size_bytes());
}

}  // namespace strata::test
