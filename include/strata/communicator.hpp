// strata::Communicator: the collectives on one MPI communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "strata/errors.hpp"
#include "strata/options.hpp"
#include "strata/topology.hpp"
#include "strata/types.hpp"

namespace strata {

class Communicator {
 public:
  // Collective over `comm`: every rank of `comm` must construct it. The
  // communicator is duplicated, so strata's traffic never mixes with the
  // caller's. Construction also groups ranks into nodes, reads each node's
  // topology (hwloc) and maps the node's shared-memory segment, so that no
  // later call blocks outside its deadline. Throws InvalidArgument for a bad
  // Config (unknown algorithm in the spec) or STRATA_RANKS_PER_NODE,
  // Unavailable if hwloc fails, BackendError if MPI or shared memory fails.
  explicit Communicator(MPI_Comm comm, Config config = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int rank() const;
  int size() const;

  // The nodes, their hardware and every rank's binding, discovered once at
  // construction (collectively) and identical on every rank.
  const Topology& topology() const;

  // Every rank's `out` receives op(in of all ranks). In place when
  // in.data == out.data; count 0 is legal. All ranks pass the same count,
  // dtype and op. Guarantees: identical bits on every rank, the same bits run
  // to run, f16/bf16 reduced in f32, mean keeps the dtype.
  // Throws InvalidArgument (before sending anything), DeadlineExceeded,
  // PeerFailure (communicator already broken), BackendError.
  void all_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});

  // Like all_reduce, but only `root` receives the result; `out` is ignored
  // (may be null) on other ranks. Throws as all_reduce; InvalidArgument for
  // a root outside [0, size).
  void reduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options = {});

  // Copies `root`'s buffer into every other rank's buffer.
  void broadcast(Tensor buffer, int root, const CommunicationOptions& options = {});

  // All-reduces each tensor in place, packing them per `packing` and
  // options.bytes_per_pack (0 = automatic; see PackingOptions). Tensors must
  // not overlap. Results land in the caller's tensors whatever the packing;
  // `on_pack_done(i)` fires once per pack, in order, as soon as pack i's
  // results are in the caller's tensors. The timeout bounds the whole batch.
  // Packing moves elements between calls, so floating-point results may
  // differ in the last bits from per-tensor all_reduce (still identical on
  // every rank and deterministic).
  void batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const CommunicationOptions& options = {},
                        std::function<void(std::size_t pack)> on_pack_done = {});
  void batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing,
                        const CommunicationOptions& options = {},
                        std::function<void(std::size_t pack)> on_pack_done = {});

  // The algorithm (with "#shards" when > 1, "a/b" when hierarchical) this
  // communicator's spec runs for a host-memory call of `bytes` bytes.
  std::string algorithm_for(std::size_t bytes, Collective collective = Collective::all_reduce) const;

  // True once a timeout or a peer failure broke the communicator.
  bool broken() const;

 private:
  struct Impl;
  friend Impl& impl_of(Communicator&);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
