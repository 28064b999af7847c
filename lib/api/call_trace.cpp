// The trace span of one public call (STRATA_TRACE, util/trace.hpp): its
// args say what the call was (bytes, dtype, op, root), what ran it (the
// plan's text, the call's number) and how it ended ("ok" or the error's
// type and message). Only reached with tracing on.
#include <fmt/format.h>

#include "api/session.hpp"

namespace strata::api {

void Session::end_span_common(util::trace::Span& span, std::uint64_t before, std::string_view outcome,
                              std::string_view error) {
  util::trace::Args& args = span.args();
  // A call refused before it took a number (broken communicator, or invalid
  // arguments with nobody to tell) has none.
  if (sequence_ > before) args.add("sequence", sequence_);
  args.add("outcome", outcome);
  if (!error.empty()) args.add("error", error);
  span.end();
  if (broken()) util::trace::write_file();
}

void Session::end_call_span(util::trace::Span& span, const Call& call, std::uint64_t before,
                            std::string_view outcome, std::string_view error) {
  util::trace::Args& args = span.args();
  args.add("bytes", std::uint64_t(call.job.bytes())).add("count", std::uint64_t(call.job.count));
  args.add("dtype", to_string(call.job.dtype)).add("memory", to_string(call.memory));
  if (call.collective != Collective::broadcast) args.add("op", to_string(call.job.op));
  if (call.collective != Collective::all_reduce) args.add("root", call.job.root);
  // The plan that ran: what the call recorded for timeout messages, when it
  // got as far as planning this call.
  const bool planned = sequence_ > before && current_.sequence == sequence_ && current_.algorithm != "call check";
  args.add("algorithm", planned ? current_.algorithm : std::string_view("none"));
  end_span_common(span, before, outcome, error);
}

void Session::end_call_span(util::trace::Span& span, const BatchCall& call, std::uint64_t before,
                            std::string_view outcome, std::string_view error) {
  util::trace::Args& args = span.args();
  std::size_t bytes = 0;
  std::string_view dtype;
  for (const auto& replicas : *call.batch) {
    if (replicas.empty()) continue;
    const Tensor& t = replicas.front();
    bytes += t.count * dtype_size(t.dtype);
    dtype = dtype.empty() || dtype == to_string(t.dtype) ? to_string(t.dtype) : std::string_view("mixed");
  }
  args.add("bytes", std::uint64_t(bytes)).add("tensors", std::uint64_t(call.batch->size()));
  args.add("replicas", std::uint64_t(call.batch->empty() ? 0 : call.batch->front().size()));
  args.add("dtype", dtype.empty() ? std::string_view("none") : dtype);
  if (call.collective != Collective::broadcast) args.add("op", to_string(call.op));
  if (call.collective != Collective::all_reduce) args.add("root", call.root);
  args.add("algorithm", "per pack (the pack spans)");
  end_span_common(span, before, outcome, error);
}

}  // namespace strata::api
