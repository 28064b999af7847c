#include "api/calls.hpp"

#include <fmt/format.h>

#include <array>
#include <memory>

#include "api/validate.hpp"
#include "plan/packing.hpp"
#include "util/recent.hpp"

namespace strata::api {
namespace {

// Runs the checks; the InvalidArgument they raise, if any.
template <typename Checks>
std::optional<InvalidArgument> failure_of(Checks&& checks) {
  try {
    checks();
  } catch (const InvalidArgument& e) {
    return e;
  }
  return std::nullopt;
}

// Everything the checks of a call read.
struct Arguments {
  Collective collective;
  int size, rank, root;
  Tensor in, out;
  ReduceOp op;
  CommunicationOptions options;
};

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.data == b.data && a.count == b.count && a.dtype == b.dtype && a.memory == b.memory &&
         a.device == b.device;
}

// (A NaN timeout never equals itself: such arguments are always checked,
// and always refused.)
bool same(const Arguments& a, const Arguments& b) {
  return a.collective == b.collective && a.size == b.size && a.rank == b.rank && a.root == b.root &&
         same_tensor(a.in, b.in) && same_tensor(a.out, b.out) && a.op == b.op &&
         a.options.bytes_per_pack == b.options.bytes_per_pack &&
         a.options.timeout_seconds == b.options.timeout_seconds &&
         a.options.implementation == b.options.implementation && a.options.stream == b.options.stream;
}

// A program repeats its calls (a training step, a benchmark), and the
// checks are a pure function of the arguments: the last few that passed are
// kept per thread and collective (util/recent.hpp), and an exact repeat
// skips the checks (120-140 instructions of a small call,
// docs/PERFORMANCE.md). Only valid arguments are kept, so an invalid call is
// always checked and refused.
// One per Collective, per thread, on the heap: a library that dlopen loads
// (the Python module loads libstrata) gets its thread-local storage from
// glibc's small static surplus, since libstrata has initial-exec
// variables, and five of these in place did not fit ("cannot allocate
// memory in static TLS block").
using LastValid = std::array<util::Recent<Arguments>, 5>;
[[gnu::tls_model("initial-exec")]] thread_local std::unique_ptr<LastValid> last_valid;

util::Recent<Arguments>& last_valid_of(Collective collective) {
  if (!last_valid) last_valid = std::make_unique<LastValid>();
  return (*last_valid)[static_cast<std::size_t>(collective)];
}

// Runs `checks` unless `arguments` repeat valid ones of their collective
// kept above; the InvalidArgument they raise, if any.
template <typename Checks>
std::optional<InvalidArgument> failure_unless_repeated(const Arguments& arguments, Checks&& checks) {
  util::Recent<Arguments>& last = last_valid_of(arguments.collective);
  if (last.find([&](const Arguments& kept) { return same(kept, arguments); })) return std::nullopt;
  std::optional<InvalidArgument> failure = failure_of(checks);
  if (!failure) last.keep(arguments);
  return failure;
}

}  // namespace

Prepared prepare_all_reduce(int size, Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  Prepared p{{Collective::all_reduce, {in.data, out.data, in.count, in.dtype, op}, in.memory, in.device,
              static_cast<std::size_t>(size), &options},
             std::nullopt};
  p.invalid = failure_unless_repeated({Collective::all_reduce, size, 0, -1, in, out, op, options}, [&] {
    validate_options(options);
    validate_op(op);
    validate_tensor(in, "in");
    validate_tensor(out, "out");
    validate_in_out(in, out);
    validate_implementation(options, in.memory, "in");
  });
  return p;
}

Prepared prepare_reduce(int size, int rank, Tensor in, Tensor out, ReduceOp op, int root,
                        const CommunicationOptions& options) {
  const bool is_root = rank == root;
  Prepared p{{Collective::reduce, {in.data, is_root ? out.data : nullptr, in.count, in.dtype, op}, in.memory,
              in.device, static_cast<std::size_t>(size), &options},
             std::nullopt};
  p.call.job.root = root;
  p.invalid = failure_unless_repeated({Collective::reduce, size, rank, root, in, out, op, options}, [&] {
    validate_options(options);
    validate_op(op);
    validate_root(root, size);
    validate_tensor(in, "in");
    validate_tensor(out, "out", /*data_required=*/is_root);
    if (is_root || out.data != nullptr) validate_in_out(in, out);
    validate_implementation(options, in.memory, "in");
  });
  return p;
}

Prepared prepare_broadcast(int size, Tensor buffer, int root, const CommunicationOptions& options) {
  Prepared p{{Collective::broadcast, {buffer.data, buffer.data, buffer.count, buffer.dtype, ReduceOp::sum},
              buffer.memory, buffer.device, 1, &options},
             std::nullopt};
  p.call.job.root = root;
  p.invalid = failure_unless_repeated({Collective::broadcast, size, 0, root, buffer, buffer, ReduceOp::sum, options}, [&] {
    validate_options(options);
    validate_root(root, size);
    validate_tensor(buffer, "buffer");
    validate_implementation(options, buffer.memory, "buffer");
  });
  return p;
}

Prepared prepare_reduce_scatter(int size, int rank, Tensor in, Tensor out, ReduceOp op,
                                const CommunicationOptions& options) {
  const auto ranks = static_cast<std::size_t>(size);
  Prepared p{{Collective::reduce_scatter, {in.data, out.data, out.count, in.dtype, op}, in.memory, in.device, ranks,
              &options},
             std::nullopt};
  p.call.blocks = ranks;
  p.invalid = failure_unless_repeated({Collective::reduce_scatter, size, rank, -1, in, out, op, options}, [&] {
    validate_options(options);
    validate_op(op);
    validate_tensor(in, "in");
    validate_tensor(out, "out");
    validate_blocks(in, "in", out, "out", size, rank);
    validate_implementation(options, in.memory, "in");
  });
  return p;
}

Prepared prepare_all_gather(int size, int rank, Tensor in, Tensor out, const CommunicationOptions& options) {
  const auto ranks = static_cast<std::size_t>(size);
  Prepared p{{Collective::all_gather, {in.data, out.data, in.count, in.dtype, ReduceOp::sum}, in.memory, in.device,
              1, &options},
             std::nullopt};
  p.call.blocks = ranks;
  p.invalid = failure_unless_repeated({Collective::all_gather, size, rank, -1, in, out, ReduceOp::sum, options}, [&] {
    validate_options(options);
    validate_tensor(in, "in");
    validate_tensor(out, "out");
    validate_blocks(out, "out", in, "in", size, rank);
    validate_implementation(options, in.memory, "in");
  });
  return p;
}

std::optional<InvalidArgument> validate_batch_all_reduce(std::span<const Tensor> tensors, ReduceOp op,
                                                         const PackingOptions& packing,
                                                         const CommunicationOptions& options) {
  return failure_of([&] {
    validate_options(options);
    validate_op(op);
    plan::validate_packing(packing);
    for (std::size_t i = 0; i < tensors.size(); ++i) validate_tensor(tensors[i], fmt::format("tensors[{}]", i));
    validate_same_memory(tensors, "tensors");
    validate_batch_size(tensors, "tensors");
    validate_disjoint(tensors, "tensors");
    if (!tensors.empty()) validate_implementation(options, tensors[0].memory, "tensors");
  });
}

}  // namespace strata::api
