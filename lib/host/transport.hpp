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
#include <utility>
#include <vector>

#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "util/arena.hpp"
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
  // A receive that lands in strata's memory first and is copied to its
  // destination when the set completes (see Transport::irecv).
  struct Landing {
    const std::byte* from;
    void* to;
    std::size_t bytes;
  };
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
  std::vector<Landing> landings_;
  // Receives' destinations, kept only while a fault is armed (util/fault.hpp).
  std::vector<std::pair<void*, std::size_t>> received_;
};

class Transport {
 public:
  // `landing`: where receives meant for memory outside `workspace` (the
  // caller's buffers) land first when the call has a deadline; null = they
  // go straight to their destination.
  Transport(MPI_Comm comm, const util::Deadline& deadline, CallInfo info, util::Workspace& workspace,
            util::Arena* landing = nullptr);
  // The same with rank and size already known (saves two MPI calls per call
  // on the latency path).
  Transport(MPI_Comm comm, int rank, int size, const util::Deadline& deadline, CallInfo info,
            util::Workspace& workspace, util::Arena* landing = nullptr)
      : comm_(comm),
        rank_(rank),
        size_(size),
        deadline_(deadline),
        info_(info),
        workspace_(workspace),
        landing_(deadline.bounded() ? landing : nullptr) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }
  const CallInfo& info() const { return info_; }
  // Whether this call has a timeout (algorithms may pick blocking MPI calls without one).
  bool bounded() const { return deadline_.bounded(); }

  // Post a send / receive of `bytes` bytes (any size: large messages are
  // split). Messages between two ranks on the same tag match in order.
  // The received bytes are in `data` once the set completes (test() true or
  // wait() returned). Nothing after an error: with a deadline and a landing
  // arena, a receive into memory that is not strata's scratch lands in the
  // arena and is copied to `data` on completion, so a receive still pending
  // when the call gives up can never write into the caller's buffer.
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
  // node and the plan runs the algorithm over it (plan::Choice::shared_memory,
  // from its descriptor's plan::Algorithm::shared_memory); otherwise null.
  ShmSegment* shared_memory() const { return shm_; }
  void set_shared_memory(ShmSegment* segment) { shm_ = segment; }

  // The call's fingerprint, when the algorithm's first shared-memory round
  // is to carry the check that every rank makes the same call (so the
  // check costs no extra synchronisation). take_check() hands it over once.
  void set_check(const plan::Fingerprint* check) { check_ = check; }
  const plan::Fingerprint* take_check() { return std::exchange(check_, nullptr); }

 private:
  [[noreturn]] void throw_deadline(std::vector<int> waiting_for) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  const util::Deadline& deadline_;
  CallInfo info_;
  util::Workspace& workspace_;
  util::Arena* landing_ = nullptr;
  ShmSegment* shm_ = nullptr;
  const plan::Fingerprint* check_ = nullptr;
};

}  // namespace strata::host
