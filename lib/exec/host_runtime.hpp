// The host side of one communicator's execution: the node's shared-memory
// segment, the scratch the host algorithms and batches use, the arena that
// receives land in when a call has a deadline, and the pipeline chunk of
// the ring algorithms. Made with the communicator; what host collectives
// run over (HostContext) comes from here. Internal header.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

#include "exec/execute.hpp"
#include "host/shm_segment.hpp"
#include "topo/node_split.hpp"
#include "util/arena.hpp"
#include "util/workspace.hpp"

namespace strata::exec {

class HostRuntime {
 public:
  HostRuntime() = default;
  // Makes it ready, once: maps the node's shared-memory segment (collective
  // over split.node and unbounded in time: only when the communicator is
  // made). `chunk_bytes`: Config::chunk_bytes (0: the default).
  void start(MPI_Comm comm, int rank, int size, const topo::NodeSplit& split, std::size_t chunk_bytes,
             plan::Numerics numerics);
  HostRuntime(const HostRuntime&) = delete;
  HostRuntime& operator=(const HostRuntime&) = delete;

  // What host collectives of this communicator run over.
  const HostContext& context() const { return context_; }
  // The ring pipeline's chunk: Config::chunk_bytes, or the default when it
  // is 0. Part of every fingerprint (ranks cutting a ring differently would
  // mismatch messages).
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  // Whether the node has a shared-memory segment (more than one rank).
  bool has_segment() const { return segment_ != nullptr; }
  // A batch's pack staging (grow-only, reused across calls).
  util::Workspace& staging() { return staging_; }

  // After each call: the landing arena is empty again.
  void end_call() { landing_.reset(); }
  // After a failed call: work given up on may still touch these buffers, so
  // they are leaked, never freed or reused.
  void abandon();
  // Unmaps the segment (its name was unlinked at creation). Never throws.
  void reset() noexcept { segment_.reset(); }

 private:
  std::unique_ptr<host::ShmSegment> segment_;
  util::Workspace workspace_;  // algorithm scratch
  util::Workspace staging_;    // pack staging (batches)
  util::Arena landing_;        // receives into callers' buffers land here first when a call has a timeout
  std::size_t chunk_bytes_ = 0;
  HostContext context_;
};

}  // namespace strata::exec
