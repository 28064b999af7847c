// The trace span of one public call (STRATA_TRACE, util/trace.hpp): its
// args say what the call was (bytes, dtype, op, root), what ran it (the
// plan's text, the call's number) and how it ended ("ok" or the error's
// type and message). Only reached with tracing on.
#include <fmt/format.h>

#include "api/session.hpp"
#include "plan/collective.hpp"

namespace strata::api {
namespace {

// An enum's name, or "invalid (N)": a refused call's span describes the
// arguments as passed, and to_string throws on a value out of range.
template <typename Enum>
std::string name_of(Enum value) {
  try {
    return std::string(to_string(value));
  } catch (const std::exception&) {
    return fmt::format("invalid ({})", static_cast<long long>(value));
  }
}

// The bytes of `count` elements, 0 for an invalid dtype.
std::uint64_t bytes_of(std::size_t count, DataType dtype) {
  try {
    return std::uint64_t(count) * dtype_size(dtype);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

void Session::end_span_common(util::trace::Span& span, std::uint64_t before, std::string_view outcome,
                              std::string_view error) {
  util::trace::Args& args = span.args();
  // A call refused before it took a number (broken communicator, or invalid
  // arguments with nobody to tell) has none.
  if (sequence_ > before) args.add("sequence", sequence_.load());
  args.add("outcome", outcome);
  if (!error.empty()) args.add("error", error);
  span.end();
  if (broken()) util::trace::write_file();
}

void Session::end_call_span(util::trace::Span& span, const Call& call, std::uint64_t before,
                            std::string_view outcome, std::string_view error) {
  util::trace::Args& args = span.args();
  args.add("bytes", bytes_of(call.job.count * call.blocks, call.job.dtype)).add("count", std::uint64_t(call.job.count));
  args.add("dtype", name_of(call.job.dtype)).add("memory", name_of(call.memory));
  if (plan::reduces(call.collective)) args.add("op", name_of(call.job.op));
  if (plan::rooted(call.collective)) args.add("root", call.job.root);
  // The plan that ran: what the call recorded for timeout messages, when it
  // got as far as planning this call.
  const bool planned = sequence_ > before && executor_.current().sequence == sequence_ && executor_.current().algorithm != "call check";
  args.add("algorithm", planned ? executor_.current().algorithm : std::string_view("none"));
  end_span_common(span, before, outcome, error);
}

void Session::end_call_span(util::trace::Span& span, const BatchCall& call, std::uint64_t before,
                            std::string_view outcome, std::string_view error) {
  util::trace::Args& args = span.args();
  std::uint64_t bytes = 0;
  std::string dtype;
  for (const auto& replicas : *call.batch) {
    if (replicas.empty()) continue;
    const Tensor& t = replicas.front();
    bytes += bytes_of(t.count, t.dtype);
    const std::string name = name_of(t.dtype);
    dtype = dtype.empty() || dtype == name ? name : "mixed";
  }
  args.add("bytes", bytes).add("tensors", std::uint64_t(call.batch->size()));
  args.add("replicas", std::uint64_t(call.batch->empty() ? 0 : call.batch->front().size()));
  args.add("dtype", dtype.empty() ? std::string_view("none") : std::string_view(dtype));
  if (plan::reduces(call.collective)) args.add("op", name_of(call.op));
  if (plan::rooted(call.collective)) args.add("root", call.root);
  args.add("algorithm", "per pack (the pack spans)");
  end_span_common(span, before, outcome, error);
}

}  // namespace strata::api
