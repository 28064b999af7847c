#include "staging.hpp"

#include <cstring>

#include "mpi_types.hpp"
#include "util/copy.hpp"

namespace strata::interpose {
namespace {

// The datatype `finish` unpacks with: the program's for a blocking call,
// else a duplicate (`owned`), freed by `finish` once it has unpacked.
int unpack_type(MPI_Datatype type, bool started, MPI_Datatype& use, bool& owned) {
  use = type;
  owned = false;
  if (!started || is_named(type)) return MPI_SUCCESS;
  const int rc = PMPI_Type_dup(type, &use);
  owned = rc == MPI_SUCCESS;
  return rc;
}

// Unpacks `size` packed bytes into `count` x `type` at `buffer`; frees
// `type` when it is the staging's own duplicate.
int unpack(const unsigned char* bytes, std::size_t size, void* buffer, int count, MPI_Datatype type, bool owned,
           MPI_Comm comm) {
  int position = 0;
  const int rc = PMPI_Unpack(bytes, static_cast<int>(size), &position, buffer, count, type, comm);
  if (owned) PMPI_Type_free(&type);
  return rc;  // a failed PMPI_Unpack has called the error handler
}

}  // namespace

int stage_reduction(const void* sendbuf, void* recvbuf, const Decision& d, int root, Seat seat, Staged& s) {
  // MPI_Reduce's recvbuf is significant only at the root; strata ignores
  // `out` elsewhere.
  const bool receives = root == kAllRanks || seat.rank == root;
  s.out = Tensor{receives ? recvbuf : nullptr, d.count, d.dtype};
  s.in = sendbuf == MPI_IN_PLACE ? s.out : Tensor{const_cast<void*>(sendbuf), d.count, d.dtype};
  return MPI_SUCCESS;
}

int stage_broadcast(void* buffer, int count, MPI_Datatype type, const Decision& d, int root, MPI_Comm comm, Seat seat,
                    bool started, Staged& s) {
  if (!d.packed) {
    s.in = s.out = Tensor{buffer, d.count, DataType::u8};
    return MPI_SUCCESS;
  }
  // A datatype that is not plain bytes on this rank: the root packs it, every
  // rank receives the packed bytes, the others unpack them (MPI_Pack's format
  // on one machine is the data's bytes in type-signature order, which is what
  // a rank using a predefined datatype holds).
  s.bytes.resize(d.count);
  s.in = s.out = Tensor{s.bytes.data(), d.count, DataType::u8};
  if (seat.rank == root) {
    int position = 0;
    return PMPI_Pack(buffer, count, type, s.bytes.data(), static_cast<int>(d.count), &position, comm);
  }
  MPI_Datatype use = type;
  bool owned = false;
  if (const int rc = unpack_type(type, started, use, owned); rc != MPI_SUCCESS) return rc;
  s.finish = [bytes = s.bytes.data(), size = d.count, buffer, count, use, owned, comm] {
    return unpack(bytes, size, buffer, count, use, owned, comm);
  };
  return MPI_SUCCESS;
}

int stage_reduce_scatter(const void* sendbuf, void* recvbuf, const Decision& d, Seat seat, Staged& s) {
  // MPI_IN_PLACE: recvbuf holds every block of the input and receives the
  // result in its first block. MPI leaves the other blocks undefined; Open
  // MPI keeps them as they were, and programs check that (mpi4py's tests
  // do). strata's in-place form leaves the result in this rank's block, so
  // rank 0 (whose block is the front) runs in place, and another rank
  // reduces into staging bytes, copied to the front afterwards: recvbuf is
  // then only read until that copy.
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::size_t ranks = static_cast<std::size_t>(seat.size);
  const std::size_t block_bytes = d.count * dtype_size(d.dtype);
  const bool staged = in_place && seat.rank != 0;
  if (staged) s.bytes.resize(block_bytes);
  s.in = Tensor{in_place ? recvbuf : const_cast<void*>(sendbuf), ranks * d.count, d.dtype};
  s.out = Tensor{staged ? static_cast<void*>(s.bytes.data()) : recvbuf, d.count, d.dtype};
  if (!staged) return MPI_SUCCESS;
  s.finish = [recvbuf, result = s.bytes.data(), block_bytes] {
    util::copy_bytes(recvbuf, result, block_bytes);
    return MPI_SUCCESS;
  };
  return MPI_SUCCESS;
}

int stage_all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, const Decision& d, MPI_Comm comm, Seat seat, bool started, Staged& s) {
  // strata gathers bytes: d.count per rank, rank r's at block r.
  const int rank = seat.rank;
  const int ranks = seat.size;
  const std::size_t whole = static_cast<std::size_t>(ranks) * d.count;
  const std::size_t at = static_cast<std::size_t>(rank) * d.count;
  if (!d.packed && !d.send_packed) {
    s.out = Tensor{recvbuf, whole, DataType::u8};
    s.in = sendbuf == MPI_IN_PLACE ? Tensor{static_cast<unsigned char*>(recvbuf) + at, d.count, DataType::u8}
                                   : Tensor{const_cast<void*>(sendbuf), d.count, DataType::u8};
    return MPI_SUCCESS;
  }
  // A datatype that is not plain bytes on this rank, on either side (MPI's
  // format from MPI_Pack, as for MPI_Bcast). The bytes are gathered into
  // recvbuf where the receive side is plain bytes, else into staging bytes
  // unpacked into recvbuf afterwards. This rank's block is packed into its
  // place there (from sendbuf, or with MPI_IN_PLACE from its block of
  // recvbuf) and gathered in place, unless sendbuf is plain bytes.
  auto* gathered = static_cast<unsigned char*>(recvbuf);
  if (d.packed) {
    s.bytes.resize(whole);
    gathered = s.bytes.data();
  }
  s.in = Tensor{gathered + at, d.count, DataType::u8};
  s.out = Tensor{gathered, whole, DataType::u8};
  int rc = MPI_SUCCESS, position = 0;
  if (sendbuf == MPI_IN_PLACE) {  // then d.packed: recvbuf's block, in recvtype's layout
    MPI_Aint lb = 0, extent = 0;
    rc = PMPI_Type_get_extent(recvtype, &lb, &extent);
    const void* mine = static_cast<unsigned char*>(recvbuf) + static_cast<MPI_Aint>(rank) * recvcount * extent;
    if (rc == MPI_SUCCESS) rc = PMPI_Pack(mine, recvcount, recvtype, s.in.data, static_cast<int>(d.count), &position, comm);
  } else if (d.send_packed) {
    rc = PMPI_Pack(sendbuf, sendcount, sendtype, s.in.data, static_cast<int>(d.count), &position, comm);
  } else {
    s.in.data = const_cast<void*>(sendbuf);
  }
  if (rc != MPI_SUCCESS || !d.packed) return rc;
  MPI_Datatype use = recvtype;
  bool owned = false;
  if ((rc = unpack_type(recvtype, started, use, owned)) != MPI_SUCCESS) return rc;
  s.finish = [bytes = s.bytes.data(), whole, recvbuf, count = ranks * recvcount, use, owned, comm] {
    return unpack(bytes, whole, recvbuf, count, use, owned, comm);
  };
  return MPI_SUCCESS;
}

}  // namespace strata::interpose
