#include "decide.hpp"

#include <climits>
#include <cstdint>

#include "comm_cache.hpp"
#include "mpi_types.hpp"
#include "settings.hpp"

namespace strata::interpose {
namespace {

Decision refuse(Why why, const char* detail = nullptr) {
  Decision d;
  d.why = why;
  d.detail = detail;
  return d;
}

// `count` elements of `type` reduced with `op`, as strata reduces them, or
// why it cannot (a datatype or an operation it has no kernel for).
Decision reduction(MPI_Datatype type, MPI_Op op, int count) {
  const auto dtype = reduction_dtype(type);
  if (!dtype) return refuse(Why::datatype);
  const auto rop = reduction_op(op);
  if (!rop) return refuse(Why::op);
  Decision d;
  d.dtype = *dtype;
  d.op = *rop;
  d.count = static_cast<std::size_t>(count);
  return d;
}

// The bytes of `count` elements of `type` (`type_size` each), `blocks` of
// which make one packed message, or why strata declines them. MPI_Pack's
// sizes are int: keeping the whole message under INT_MAX lets any rank
// pack or unpack it in one call, whatever datatype it describes it with.
// (An element over INT_MAX means a message over INT_MAX on every rank;
// checking it first keeps the product from overflowing.)
Decision packed_size(int count, MPI_Datatype type, int blocks, MPI_Count& type_size, long long& bytes) noexcept {
  if (type == MPI_DATATYPE_NULL) return refuse(Why::datatype);
  if (PMPI_Type_size_x(type, &type_size) != MPI_SUCCESS || type_size < 0) return refuse(Why::datatype);
  if (type_size == 0) return refuse(Why::empty);
  if (type_size > INT_MAX) return refuse(Why::too_large);
  bytes = static_cast<long long>(count) * type_size;
  if (bytes > INT_MAX / blocks) return refuse(Why::too_large);
  return {};
}

// Checks shared by every call: the process, the communicator, count.
// Returns Why::none when they pass; `size` and `rank` receive the
// communicator's size and this rank (from its cached strata Communicator
// when it has one, without asking MPI: the routed call then finds that
// entry again in comm_cache's one-slot cache; else rank is -1, asked for
// only where a call needs it).
Decision check_common(int count, MPI_Comm comm, int& size, int& rank) {
  if (const char* refusal = process_refusal()) return refuse(Why::process, refusal);
  if (comm == MPI_COMM_NULL) return refuse(Why::comm_null);
  CommEntry* entry = find_entry_fast(comm);
  if (entry && !entry->strata) entry = nullptr;
  if (entry) {
    size = entry->strata->size();  // cached entries are intracommunicators
    rank = entry->strata->rank();
  } else {
    rank = -1;
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return refuse(Why::comm_invalid);
    if (inter) return refuse(Why::intercomm);
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return refuse(Why::comm_invalid);
  }
  if (count < 0) return refuse(Why::negative_count);
  if (count == 0) return refuse(Why::empty);
  return {};
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// The buffers of a rank that receives a reduction, as MPI defines them:
// `send_bytes` at sendbuf (or MPI_IN_PLACE) reduced into `recv_bytes` at
// recvbuf. Only erroneous calls fail these checks.
Decision check_receiving(const void* sendbuf, const void* recvbuf, std::size_t send_bytes, std::size_t recv_bytes) {
  if (recvbuf == MPI_IN_PLACE) return refuse(Why::buffers, "recvbuf is MPI_IN_PLACE");
  if (recvbuf == nullptr) return refuse(Why::buffers, "recvbuf is null");
  if (sendbuf == nullptr) return refuse(Why::buffers, "sendbuf is null");
  if (sendbuf != MPI_IN_PLACE) {
    if (sendbuf == recvbuf) return refuse(Why::buffers, "sendbuf == recvbuf without MPI_IN_PLACE");
    if (overlap(sendbuf, send_bytes, recvbuf, recv_bytes)) return refuse(Why::buffers, "sendbuf and recvbuf overlap");
  }
  return {};
}

// Whether `type` (of `type_size` bytes) lies in memory as its bytes: a
// predefined datatype without padding. Anything else (derived types,
// MPI_DOUBLE_INT and its padding) is packed.
bool plain_bytes(MPI_Datatype type, MPI_Count type_size) {
  MPI_Count lb = 0, extent = 0;
  return is_named(type) && PMPI_Type_get_extent_x(type, &lb, &extent) == MPI_SUCCESS && lb == 0 && extent == type_size;
}

}  // namespace

Decision decide_reduction(const void* sendbuf, const void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                          MPI_Comm comm) noexcept {
  int size = 0, rank = -1;
  if (Decision d = check_common(count, comm, size, rank); !d.to_strata()) return d;
  const Decision reduced = reduction(type, op, count);
  if (!reduced.to_strata()) return reduced;
  if (root != kAllRanks && (root < 0 || root >= size)) return refuse(Why::root);

  // Buffers, as MPI defines them. Only erroneous calls fail these checks.
  if (root != kAllRanks && rank < 0 && PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return refuse(Why::comm_invalid);
  const bool receives = root == kAllRanks || rank == root;
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(reduced.dtype);
  if (receives) {
    if (Decision d = check_receiving(sendbuf, recvbuf, bytes, bytes); !d.to_strata()) return d;
  } else {
    if (sendbuf == MPI_IN_PLACE) return refuse(Why::buffers, "MPI_IN_PLACE on a rank that is not the root");
    if (sendbuf == nullptr) return refuse(Why::buffers, "sendbuf is null");
  }
  return reduced;
}

Decision decide_broadcast(const void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) noexcept {
  int size = 0, rank = -1;
  if (Decision d = check_common(count, comm, size, rank); !d.to_strata()) return d;
  // The message size: count x the type's size, identical on every rank
  // because MPI requires matching type signatures.
  MPI_Count type_size = 0;
  long long bytes = 0;
  if (Decision d = packed_size(count, type, 1, type_size, bytes); !d.to_strata()) return d;
  if (root < 0 || root >= size) return refuse(Why::root);

  // This rank's layout (local; does not change the decision).
  const bool contiguous = plain_bytes(type, type_size);
  if (contiguous && buffer == nullptr) return refuse(Why::buffers, "buffer is null");
  Decision d;
  d.dtype = DataType::u8;
  d.count = static_cast<std::size_t>(bytes);
  d.packed = !contiguous;
  return d;
}

Decision decide_reduce_scatter(const void* sendbuf, const void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                               MPI_Comm comm) noexcept {
  int size = 0, rank = -1;
  if (Decision d = check_common(count, comm, size, rank); !d.to_strata()) return d;
  const Decision reduced = reduction(type, op, count);
  if (!reduced.to_strata()) return reduced;
  // Every rank sends one block per rank and receives one (with MPI_IN_PLACE,
  // recvbuf holds all of them: its size is not checked, as MPI does not).
  const std::size_t block = static_cast<std::size_t>(count) * dtype_size(reduced.dtype);
  if (Decision d = check_receiving(sendbuf, recvbuf, static_cast<std::size_t>(size) * block, block); !d.to_strata())
    return d;
  return reduced;
}

Decision decide_all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, const void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  int size = 0, rank = -1;
  if (Decision d = check_common(recvcount, comm, size, rank); !d.to_strata()) return d;
  // One block: recvcount x recvtype's size, identical on every rank because
  // every rank's receive signature must match every rank's send signature.
  // The send side's datatype and count may differ from the receive side's
  // and from rank to rank, so they do not enter the decision.
  MPI_Count recv_size = 0;
  long long block = 0;
  if (Decision d = packed_size(recvcount, recvtype, size, recv_size, block); !d.to_strata()) return d;

  // This rank's send side and layouts (local; only erroneous calls fail
  // these checks, and the layouts do not change the decision).
  MPI_Count send_size = 0;
  if (recvbuf == MPI_IN_PLACE) return refuse(Why::buffers, "recvbuf is MPI_IN_PLACE");
  if (sendbuf != MPI_IN_PLACE) {
    if (sendcount < 0) return refuse(Why::negative_count);
    if (sendtype == MPI_DATATYPE_NULL || PMPI_Type_size_x(sendtype, &send_size) != MPI_SUCCESS)
      return refuse(Why::buffers, "sendtype is not a datatype");
    if (send_size < 0 || send_size > INT_MAX || sendcount * send_size != block)
      return refuse(Why::buffers, "sendcount x sendtype is not as many bytes as recvcount x recvtype");
  }
  const bool recv_plain = plain_bytes(recvtype, recv_size);
  const bool send_plain = sendbuf == MPI_IN_PLACE || plain_bytes(sendtype, send_size);
  // (A derived datatype may hold absolute addresses, with buffers null,
  // i.e. MPI_BOTTOM: only plain bytes are checked.)
  if (recv_plain && recvbuf == nullptr) return refuse(Why::buffers, "recvbuf is null");
  if (sendbuf != MPI_IN_PLACE && send_plain) {
    if (sendbuf == nullptr) return refuse(Why::buffers, "sendbuf is null");
    if (recv_plain && sendbuf == recvbuf) return refuse(Why::buffers, "sendbuf == recvbuf without MPI_IN_PLACE");
    if (recv_plain &&
        overlap(sendbuf, static_cast<std::size_t>(block), recvbuf, static_cast<std::size_t>(block) * size))
      return refuse(Why::buffers, "sendbuf and recvbuf overlap");
  }
  Decision d;
  d.dtype = DataType::u8;
  d.count = static_cast<std::size_t>(block);
  d.packed = !recv_plain;
  d.send_packed = !send_plain;
  return d;
}

}  // namespace strata::interpose
