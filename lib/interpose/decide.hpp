// The routing decision for one intercepted call: strata or PMPI, and why.
//
// A correct MPI program gets the same decision on every rank of the call,
// because it depends only on what MPI requires every rank to agree on: the
// process-wide switches (settings.hpp), the communicator, and for
// MPI_Allreduce / MPI_Reduce / MPI_Reduce_scatter_block the count, datatype
// and op (which must be the same on every rank), the root, and for
// MPI_Bcast / MPI_Allgather the root and the message size in bytes (MPI only
// requires the type signatures to match, so a rank may describe the same
// bytes with another, even non-contiguous, datatype, and MPI_Allgather's
// send and receive datatypes may differ: those ranks pack and unpack around
// strata's call, see collectives.cpp).
// The remaining checks are rank-local and only fail for arguments MPI itself
// rejects or leaves undefined (MPI_IN_PLACE where it is not allowed, aliased
// or null buffers); such calls go to PMPI_*, so the program sees MPI's own
// error.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "strata/types.hpp"

namespace strata::interpose {

// Why a call goes to PMPI_* (Why::none: it goes to strata).
enum class Why {
  none,
  process,         // settings.hpp's process_refusal(); detail = its text
  comm_null,       // MPI_COMM_NULL: MPI reports the error
  comm_invalid,    // MPI cannot say the communicator's size or rank: MPI reports the error
  intercomm,       // intercommunicators are not served
  negative_count,  // MPI reports the error
  empty,           // count 0 (or 0 bytes): nothing to move
  datatype,        // not a datatype strata reduces (or MPI_DATATYPE_NULL)
  op,              // not MPI_SUM/PROD/MIN/MAX
  root,            // root outside [0, size): MPI reports the error
  buffers,         // erroneous buffer arguments; detail says which
  too_large,       // MPI_Bcast, MPI_Allgather: more than INT_MAX bytes
  unavailable,     // strata could not start on this communicator; detail says why
};

struct Decision {
  Why why = Why::none;
  const char* detail = nullptr;
  DataType dtype = DataType::u8;  // what strata sees (reductions: the element type; MPI_Bcast, MPI_Allgather: bytes)
  ReduceOp op = ReduceOp::sum;
  std::size_t count = 0;          // elements of dtype (MPI_Reduce_scatter_block, MPI_Allgather: in one rank's block)
  bool packed = false;            // MPI_Bcast, MPI_Allgather's receive side: this rank packs/unpacks a
                                  // non-contiguous datatype
  bool send_packed = false;       // MPI_Allgather: this rank packs its non-contiguous send datatype

  bool to_strata() const { return why == Why::none; }
};

// Root value meaning "all ranks receive" (MPI_Allreduce).
inline constexpr int kAllRanks = -1;

// MPI_Allreduce (root = kAllRanks) or MPI_Reduce. Local; never throws.
Decision decide_reduction(const void* sendbuf, const void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                          int root, MPI_Comm comm) noexcept;

// MPI_Bcast. Local; never throws.
Decision decide_broadcast(const void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) noexcept;

// MPI_Reduce_scatter_block: `count` is recvcount, the elements of one block.
// Local; never throws.
Decision decide_reduce_scatter(const void* sendbuf, const void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                               MPI_Comm comm) noexcept;

// MPI_Allgather, decided on the bytes of one block (recvcount x recvtype's
// size, the same on every rank); the send side is checked against it
// locally. Local; never throws.
Decision decide_all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, const void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm) noexcept;

}  // namespace strata::interpose
