// Transport: the point-to-point layer every host algorithm uses for one
// collective call. It posts non-blocking sends and receives on the
// communicator's private MPI_Comm, waits for them by polling against the
// call's deadline, and on expiry raises DeadlineExceeded naming the peers it
// still waits for and the collective (name, sequence number, bytes).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/job.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"

namespace strata::host {

class ShmSegment;

using plan::CallInfo;


// A set of in-flight operations and the peers they involve.
class Requests {
 public:
  bool empty() const { return requests_.empty(); }

 private:
  friend class Transport;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
};

class Transport {
 public:
  Transport(MPI_Comm comm, const util::Deadline& deadline, CallInfo info, util::Workspace& workspace);
  // The same with rank and size already known (saves two MPI calls per call
  // on the latency path).
  Transport(MPI_Comm comm, int rank, int size, const util::Deadline& deadline, CallInfo info,
            util::Workspace& workspace)
      : comm_(comm), rank_(rank), size_(size), deadline_(deadline), info_(info), workspace_(workspace) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }
  const CallInfo& info() const { return info_; }
  // Whether this call has a timeout (algorithms may pick blocking MPI calls without one).
  bool bounded() const { return deadline_.bounded(); }

  // Post a send / receive of `bytes` bytes (any size: large messages are
  // split). Messages between two ranks on the same tag match in order.
  void isend(Requests& into, const void* data, std::size_t bytes, int peer, int tag = 0);
  void irecv(Requests& into, void* data, std::size_t bytes, int peer, int tag = 0);

  // Block (politely) until every request in `requests` completed; then it is
  // empty again. Throws DeadlineExceeded when the deadline passes first.
  void wait(Requests& requests);

  // True (and `requests` emptied) if all completed; never blocks.
  bool test(Requests& requests);

  // Wait for a request from one of MPI's own non-blocking collectives. MPI
  // does not say which ranks it waits for, so the error cannot name them.
  void wait_collective(MPI_Request& request);

  // Whether the call's deadline has passed.
  bool expired() const { return deadline_.expired(); }

  // For algorithms with their own progress loop: throws DeadlineExceeded
  // naming `waiting_for` if the deadline passed, otherwise backs off.
  void idle(util::Backoff& backoff, std::span<const int> waiting_for);

  // Scratch memory reused across calls (see util::Workspace). Slots are
  // private to the running algorithm.
  std::byte* scratch(std::size_t slot, std::size_t bytes) { return workspace_.get(slot, bytes); }

  // The node's shared-memory segment when every rank of comm() shares one
  // node and the running algorithm asked for it (Algorithm::uses_shared_memory);
  // otherwise null.
  ShmSegment* shared_memory() const { return shm_; }
  void set_shared_memory(ShmSegment* segment) { shm_ = segment; }

 private:
  [[noreturn]] void throw_deadline(std::vector<int> waiting_for) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  const util::Deadline& deadline_;
  CallInfo info_;
  util::Workspace& workspace_;
  ShmSegment* shm_ = nullptr;
};

}  // namespace strata::host
