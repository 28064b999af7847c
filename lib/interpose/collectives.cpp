#include "collectives.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm_cache.hpp"
#include "decide.hpp"
#include "errors.hpp"
#include "guard.hpp"
#include "log.hpp"
#include "mpi_types.hpp"
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

// `sendtype`: MPI_Allgather's, unless MPI_IN_PLACE (MPI_DATATYPE_NULL for
// the other calls).
void log_to_mpi(const char* call, MPI_Comm comm, const Decision& d, MPI_Datatype type, const MPI_Op* op,
                MPI_Datatype sendtype = MPI_DATATYPE_NULL) noexcept {
  if (!logging(Level::info)) return;
  if (d.why == Why::process && d.detail == kMpiNotRunning) return;  // naming the comm would need MPI
  try {
    log_decision(fmt::format("{} on comm {} {} -> PMPI ({})", call, comm_label(comm), describe_args(type, op, sendtype),
                             why_text(d, type, op)));
  } catch (...) {
  }
}

// "MPI_FLOAT MPI_SUM -> strata (f32 sum, pscpu)": the call in MPI's terms,
// as in the PMPI lines, then what strata ran (the algorithm its spec picks
// for the call's larger buffer: reduce_scatter's input, all_gather's
// output).
void log_to_strata(const char* call, CommEntry& entry, const Decision& d, Collective collective, MPI_Datatype type,
                   const MPI_Op* op, MPI_Datatype sendtype = MPI_DATATYPE_NULL) noexcept {
  if (!logging(Level::info)) return;
  try {
    const bool blockwise = collective == Collective::reduce_scatter || collective == Collective::all_gather;
    const std::size_t blocks = blockwise ? static_cast<std::size_t>(entry.strata->size()) : 1;
    const std::string algorithm = entry.strata->algorithm_for(blocks * d.count * dtype_size(d.dtype), collective);
    const std::string how = !op ? (d.packed || d.send_packed ? "packed, " + algorithm : algorithm)
                                : fmt::format("{} {}, {}", to_string(d.dtype), to_string(d.op), algorithm);
    log_decision(
        fmt::format("{} on comm {} {} -> strata ({})", call, entry.label, describe_args(type, op, sendtype), how));
  } catch (...) {
  }
}

CommunicationOptions call_options() {
  CommunicationOptions options;
  options.timeout_seconds = call_timeout_seconds();
  return options;
}

// The strata communicator a call runs on: nullptr when the decision sends
// it to MPI, or when creating the entry fails (`d` then says why, or
// `error` receives what creating it threw).
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

// Runs `work` inside strata; returns the exception it raised, if any. The
// guard ends before the caller reports the error, so that an error handler
// calling MPI is treated like the application.
template <typename Work>
std::exception_ptr run_in_strata(Work work) {
  InsideStrata inside;
  try {
    work();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}


}  // namespace

int all_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  constexpr const char* kCall = "MPI_Allreduce";
  Decision d = decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm);
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) return report_error(kCall, comm, error);
  if (!entry) {
    log_to_mpi(kCall, comm, d, type, &op);
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  }
  log_to_strata(kCall, *entry, d, Collective::all_reduce, type, &op);
  const Tensor out{recvbuf, d.count, d.dtype};
  const Tensor in = sendbuf == MPI_IN_PLACE ? out : Tensor{const_cast<void*>(sendbuf), d.count, d.dtype};
  if ((error = run_in_strata([&] { entry->strata->all_reduce(in, out, d.op, call_options()); })))
    return report_error(kCall, comm, error);
  return MPI_SUCCESS;
}

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  constexpr const char* kCall = "MPI_Reduce";
  Decision d = decide_reduction(sendbuf, recvbuf, count, type, op, root, comm);
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) return report_error(kCall, comm, error);
  if (!entry) {
    log_to_mpi(kCall, comm, d, type, &op);
    return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  }
  log_to_strata(kCall, *entry, d, Collective::reduce, type, &op);
  // recvbuf is significant only at the root; strata ignores `out` elsewhere.
  const bool is_root = entry->strata->rank() == root;
  const Tensor out{is_root ? recvbuf : nullptr, d.count, d.dtype};
  const Tensor in = sendbuf == MPI_IN_PLACE ? out : Tensor{const_cast<void*>(sendbuf), d.count, d.dtype};
  if ((error = run_in_strata([&] { entry->strata->reduce(in, out, d.op, root, call_options()); })))
    return report_error(kCall, comm, error);
  return MPI_SUCCESS;
}

int broadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  constexpr const char* kCall = "MPI_Bcast";
  Decision d = decide_broadcast(buffer, count, type, root, comm);
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) return report_error(kCall, comm, error);
  if (!entry) {
    log_to_mpi(kCall, comm, d, type, nullptr);
    return PMPI_Bcast(buffer, count, type, root, comm);
  }
  log_to_strata(kCall, *entry, d, Collective::broadcast, type, nullptr);
  if (!d.packed) {
    const Tensor bytes{buffer, d.count, DataType::u8};
    if ((error = run_in_strata([&] { entry->strata->broadcast(bytes, root, call_options()); })))
      return report_error(kCall, comm, error);
    return MPI_SUCCESS;
  }
  // A datatype that is not plain bytes on this rank: the root packs it, every
  // rank receives the packed bytes, the others unpack them (MPI_Pack's format
  // on one machine is the data's bytes in type-signature order, which is what
  // a rank using a predefined datatype holds).
  const bool is_root = entry->strata->rank() == root;
  std::vector<unsigned char> staging;
  int rc = MPI_SUCCESS;
  error = run_in_strata([&] {
    staging.resize(d.count);
    int position = 0;
    if (is_root) {
      rc = PMPI_Pack(buffer, count, type, staging.data(), static_cast<int>(d.count), &position, comm);
      if (rc != MPI_SUCCESS) return;
    }
    entry->strata->broadcast(Tensor{staging.data(), d.count, DataType::u8}, root, call_options());
    if (!is_root) rc = PMPI_Unpack(staging.data(), static_cast<int>(d.count), &position, buffer, count, type, comm);
  });
  if (error) return report_error(kCall, comm, error);
  return rc;  // a failed PMPI_Pack/PMPI_Unpack already called the error handler
}

int reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  constexpr const char* kCall = "MPI_Reduce_scatter_block";
  Decision d = decide_reduce_scatter(sendbuf, recvbuf, count, type, op, comm);
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) return report_error(kCall, comm, error);
  if (!entry) {
    log_to_mpi(kCall, comm, d, type, &op);
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm);
  }
  log_to_strata(kCall, *entry, d, Collective::reduce_scatter, type, &op);
  // MPI_IN_PLACE: recvbuf holds every block of the input and receives the
  // result in its first block. strata's in-place form leaves the result in
  // this rank's block instead, so a rank other than 0 copies it to the front
  // afterwards: one block's copy and no scratch buffer (MPI does not define
  // what the rest of recvbuf holds then).
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::size_t ranks = static_cast<std::size_t>(entry->strata->size());
  const std::size_t block_bytes = d.count * dtype_size(d.dtype);
  const std::size_t at = static_cast<std::size_t>(entry->strata->rank()) * block_bytes;
  const Tensor in{in_place ? recvbuf : const_cast<void*>(sendbuf), ranks * d.count, d.dtype};
  const Tensor out{in_place ? static_cast<unsigned char*>(recvbuf) + at : recvbuf, d.count, d.dtype};
  if ((error = run_in_strata([&] { entry->strata->reduce_scatter(in, out, d.op, call_options()); })))
    return report_error(kCall, comm, error);
  if (in_place && at != 0) std::memcpy(recvbuf, out.data, block_bytes);
  return MPI_SUCCESS;
}

int all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm) {
  constexpr const char* kCall = "MPI_Allgather";
  Decision d = decide_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const MPI_Datatype shown_sendtype = sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype;
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) return report_error(kCall, comm, error);
  if (!entry) {
    log_to_mpi(kCall, comm, d, recvtype, nullptr, shown_sendtype);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  log_to_strata(kCall, *entry, d, Collective::all_gather, recvtype, nullptr, shown_sendtype);
  // strata gathers bytes: d.count per rank, rank r's at block r.
  const int rank = entry->strata->rank();
  const std::size_t whole = static_cast<std::size_t>(entry->strata->size()) * d.count;
  const std::size_t at = static_cast<std::size_t>(rank) * d.count;
  if (!d.packed && !d.send_packed) {
    const Tensor out{recvbuf, whole, DataType::u8};
    const Tensor in = sendbuf == MPI_IN_PLACE ? Tensor{static_cast<unsigned char*>(recvbuf) + at, d.count, DataType::u8}
                                              : Tensor{const_cast<void*>(sendbuf), d.count, DataType::u8};
    if ((error = run_in_strata([&] { entry->strata->all_gather(in, out, call_options()); })))
      return report_error(kCall, comm, error);
    return MPI_SUCCESS;
  }
  // A datatype that is not plain bytes on this rank, on either side (MPI's
  // format from MPI_Pack, as for MPI_Bcast). The bytes are gathered into
  // recvbuf where the receive side is plain bytes, else into a staging
  // buffer unpacked into recvbuf afterwards. This rank's block is packed
  // into its place there (from sendbuf, or with MPI_IN_PLACE from its block
  // of recvbuf) and gathered in place, unless sendbuf is plain bytes.
  std::vector<unsigned char> staging;
  int rc = MPI_SUCCESS;
  error = run_in_strata([&] {
    auto* gathered = static_cast<unsigned char*>(recvbuf);
    if (d.packed) {
      staging.resize(whole);
      gathered = staging.data();
    }
    Tensor in{gathered + at, d.count, DataType::u8};
    int position = 0;
    if (sendbuf == MPI_IN_PLACE) {  // then d.packed: recvbuf's block, in recvtype's layout
      MPI_Aint lb = 0, extent = 0;
      rc = PMPI_Type_get_extent(recvtype, &lb, &extent);
      const void* mine = static_cast<unsigned char*>(recvbuf) + static_cast<MPI_Aint>(rank) * recvcount * extent;
      if (rc == MPI_SUCCESS)
        rc = PMPI_Pack(mine, recvcount, recvtype, in.data, static_cast<int>(d.count), &position, comm);
    } else if (d.send_packed) {
      rc = PMPI_Pack(sendbuf, sendcount, sendtype, in.data, static_cast<int>(d.count), &position, comm);
    } else {
      in.data = const_cast<void*>(sendbuf);
    }
    if (rc != MPI_SUCCESS) return;
    entry->strata->all_gather(in, Tensor{gathered, whole, DataType::u8}, call_options());
    position = 0;
    if (d.packed)
      rc = PMPI_Unpack(staging.data(), static_cast<int>(whole), &position, recvbuf, entry->strata->size() * recvcount,
                       recvtype, comm);
  });
  if (error) return report_error(kCall, comm, error);
  return rc;  // a failed PMPI_Pack/PMPI_Unpack already called the error handler
}

}  // namespace strata::interpose
