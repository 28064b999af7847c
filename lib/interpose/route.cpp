#include "route.hpp"

#include <fmt/format.h>

#include <string>

#include "log.hpp"
#include "mpi_types.hpp"
#include "plan/collective.hpp"
#include "settings.hpp"

namespace strata::interpose {
namespace {

// What a log line says about the call's data: "MPI_INT MPI_LAND",
// "MPI_FLOAT", and for an MPI_Allgather whose send datatype differs from its
// receive datatype `type` on this rank, "MPI_INT to MPI_BYTE".
std::string describe_args(MPI_Datatype type, const MPI_Op* op, MPI_Datatype sendtype) {
  if (sendtype != MPI_DATATYPE_NULL && sendtype != type) return type_name(sendtype) + " to " + type_name(type);
  return op ? type_name(type) + " " + op_name(*op) : type_name(type);
}

std::string why_text(const Decision& d, MPI_Datatype type, const MPI_Op* op) {
  switch (d.why) {
    case Why::none: return "";
    case Why::process: return d.detail;
    case Why::comm_null: return "MPI_COMM_NULL: MPI reports the error";
    case Why::comm_invalid: return "not a valid communicator: MPI reports the error";
    case Why::intercomm: return "intercommunicators are not served";
    case Why::negative_count: return "count < 0: MPI reports the error";
    case Why::empty: return "0 bytes: nothing to move";
    case Why::datatype: return type_name(type) + " not served";
    case Why::op: return (op ? op_name(*op) : std::string("op")) + " not served";
    case Why::root: return "root outside the communicator: MPI reports the error";
    case Why::buffers: return fmt::format("{}: MPI decides what that means", d.detail);
    case Why::too_large: return "more than INT_MAX bytes";
    case Why::unavailable: return fmt::format("strata could not start on this communicator: {}", d.detail);
  }
  return "";
}

}  // namespace

CommEntry* strata_entry(MPI_Comm comm, Decision& d, std::exception_ptr& error) {
  if (!d.to_strata()) return nullptr;
  try {
    CommEntry& entry = entry_for(comm);
    if (entry.strata) return &entry;
    d.why = Why::unavailable;
    d.detail = entry.unavailable.c_str();
  } catch (...) {
    error = std::current_exception();
  }
  return nullptr;
}

void log_to_mpi(const char* call, MPI_Comm comm, const Decision& d, MPI_Datatype type, const MPI_Op* op,
                MPI_Datatype sendtype) noexcept {
  if (!logging(Level::info)) return;
  if (d.why == Why::process && d.detail == kMpiNotRunning) return;  // naming the comm would need MPI
  try {
    log_decision(fmt::format("{} on comm {} {} -> PMPI ({})", call, comm_label(comm), describe_args(type, op, sendtype),
                             why_text(d, type, op)));
  } catch (...) {
  }
}

void log_to_strata(const char* call, CommEntry& entry, const Decision& d, Collective collective, MPI_Datatype type,
                   const MPI_Op* op, MPI_Datatype sendtype) noexcept {
  if (!logging(Level::info)) return;
  try {
    log_to_strata(call, entry, d, collective, describe_args(type, op, sendtype));
  } catch (...) {
  }
}

std::string describe_call(const CallTerms& terms) { return describe_args(terms.type, terms.op, terms.sendtype); }

void log_to_strata(const char* call, CommEntry& entry, const Decision& d, Collective collective,
                   const std::string& described) noexcept {
  if (!logging(Level::info)) return;
  try {
    const std::size_t blocks = plan::blockwise(collective) ? static_cast<std::size_t>(entry.strata->size()) : 1;
    const std::string algorithm = entry.strata->algorithm_for(blocks * d.count * dtype_size(d.dtype), collective);
    const std::string how = !plan::reduces(collective)
                                ? (d.packed || d.send_packed ? "packed, " + algorithm : algorithm)
                                : fmt::format("{} {}, {}", to_string(d.dtype), to_string(d.op), algorithm);
    log_decision(fmt::format("{} on comm {} {} -> strata ({})", call, entry.label, described, how));
  } catch (...) {
  }
}

void log_unavailable(const char* call, MPI_Comm comm, const Decision& d, const std::string& described) noexcept {
  if (!logging(Level::info)) return;
  try {
    log_decision(fmt::format("{} on comm {} {} -> PMPI ({})", call, comm_label(comm), described,
                             why_text(d, MPI_DATATYPE_NULL, nullptr)));
  } catch (...) {
  }
}

CommunicationOptions call_options() {
  CommunicationOptions options;
  options.timeout_seconds = call_timeout_seconds();
  return options;
}

}  // namespace strata::interpose
