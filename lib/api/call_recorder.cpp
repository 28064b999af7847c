// CallRecorder: the flight id's agreement, what is recorded of a call, and
// the file written on demand or on a typed error.
#include "api/call_recorder.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "plan/collective.hpp"
#include "util/check.hpp"
#include "util/flight_file.hpp"
#include "util/flight_signals.hpp"
#include "util/where.hpp"

namespace strata::api {
namespace {

// The next flight id this process would give a communicator.
std::atomic<std::uint32_t> g_next_id{1};

// -1 for what a call does not have or passed out of range (a refused
// call's op, say), so that the writer only names valid values.
std::int8_t dtype_code(DataType dtype) {
  return static_cast<unsigned>(dtype) <= static_cast<unsigned>(DataType::u64) ? static_cast<std::int8_t>(dtype) : -1;
}
std::int8_t op_code(Collective collective, ReduceOp op) {
  if (!plan::reduces(collective) || static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::prod)) return -1;
  return static_cast<std::int8_t>(op);
}

}  // namespace

void CallRecorder::prepare() { util::flight::start(); }

void CallRecorder::start(MPI_Comm comm, int rank, int size) {
  int world_rank = 0, world_size = 1;
  STRATA_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  STRATA_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  util::flight::configure_file(world_rank, world_size);
  util::flight::install_signal_handlers();
  rank_ = rank;
  size_ = size;
  // The largest id any rank would give: free on every rank of this
  // communicator (each process hands ids out in increasing order).
  std::uint32_t id = g_next_id.load();
  STRATA_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_UINT32_T, MPI_MAX, comm));
  id_ = id;
  std::uint32_t next = g_next_id.load();
  while (next <= id && !g_next_id.compare_exchange_weak(next, id + 1)) {
  }
}

util::flight::CallFacts CallRecorder::facts(const exec::Call& call, std::uint64_t sequence) const {
  using util::flight::Form;
  Form form = Form::blocking;
  if (call.request) form = call.persistent ? Form::persistent : Form::request;
  else if (call.memory == Memory::cuda && call.options->stream) form = Form::stream_ordered;
  return {.comm = id_,
          .rank = rank_,
          .size = size_,
          .sequence = sequence,
          .count = call.job.count,
          .collective = call.collective,
          .form = form,
          .dtype = dtype_code(call.job.dtype),
          .op = op_code(call.collective, call.job.op),
          .root = plan::rooted(call.collective) ? call.job.root : -1};
}

util::flight::CallFacts CallRecorder::facts(const exec::BatchCall& call, std::uint64_t sequence) const {
  std::uint64_t count = 0;
  std::int8_t dtype = call.batch->empty() ? -1 : dtype_code(call.batch->front().front().dtype);
  for (const auto& replicas : *call.batch) {
    count += replicas.front().count;
    if (dtype_code(replicas.front().dtype) != dtype) dtype = -1;  // mixed
  }
  return {.comm = id_,
          .rank = rank_,
          .size = size_,
          .sequence = sequence,
          .count = count,
          .collective = call.collective,
          .form = util::flight::Form::batch,
          .dtype = dtype,
          .op = op_code(call.collective, call.op),
          .root = plan::rooted(call.collective) ? call.root : -1};
}

void CallRecorder::dump(const char* reason, const char* message) {
  dumped_ = true;
  util::flight::write_file(reason, message);  // (best effort: the error itself says what went wrong)
}

std::string CallRecorder::dump_on_demand() {
  if (!util::flight::file_enabled())
    throw InvalidArgument(util::located(
        "dump_flight_record: STRATA_FLIGHT_DIR is not set: set it (on every rank, before the first Communicator "
        "is made) to the folder the flight record goes to"));
  if (!util::flight::write_file("on_demand", ""))
    throw InvalidArgument(util::located(fmt::format("dump_flight_record: cannot write {} (STRATA_FLIGHT_DIR): {}",
                                                    util::flight::file_path(), std::strerror(errno))));
  return util::flight::file_path();
}

}  // namespace strata::api
