// One NCCL rank of this process (ncclComm_t points to it). Communicators
// are never deleted, so a handle used after ncclCommDestroy or
// ncclCommAbort is recognised and reported.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "clique.hpp"

namespace gpu_double::nccl {
struct Held;
}

struct ncclComm {
  enum class Life { joining, live, finalizing, finalized, destroyed, aborted };

  gpu_double::nccl::Clique* clique = nullptr;
  int rank = 0, nranks = 1, device = 0;
  bool blocking = true;
  std::string label;  // "NCCL rank r of n (communicator /strata-double-nccl-...)"

  std::atomic<Life> life{Life::joining};
  std::atomic<int> error{ncclSuccess};  // the first asynchronous error; it stays
  std::atomic<bool> aborted{false};
  // A call on it returned ncclInProgress: NCCL requires polling
  // ncclCommGetAsyncError until it is no longer in progress before the next
  // call on the communicator.
  bool settle_pending = false;
  bool init_held = false;   // its initialisation waits in an open group of the calling thread
  long init_group = 0;      // the group its initialisation belongs to (0: none)
  bool init_fails = false;  // an nccl-init fault: it never joins
  bool finalize_hangs = false;  // an nccl-finalize fault: its finalization never ends

  std::uint64_t collectives = 0;  // issued, in call order
  std::uint64_t steps = 0;        // collective steps assigned so far
  std::vector<std::uint64_t> sends, receives;  // messages issued per peer
  std::atomic<int> running{0};    // operations enqueued and not finished
  gpu_double::nccl::Held* held = nullptr;  // operations an ncclInProgress return holds back
};

namespace gpu_double::nccl {

// The communicator a handle names, or null after a violation in `call`
// (never made, destroyed, aborted).
ncclComm* comm_of(const char* call, ncclComm_t handle, bool aborted_ok = false);
// Registers a new communicator.
ncclComm* new_comm();

// Records an asynchronous error on the communicator (the first one stays).
void set_error(ncclComm* comm, ncclResult_t error);

// The process's own roll of NCCL ranks by unique id, for the rule that one
// process initialises several ranks of a communicator only inside one group.
// Returns "" or the violation text.
std::string claim_rank(const ncclUniqueId& id, int rank, long group);

// The lifecycle calls of this process's communicators, in order
// (finalize, destroy, abort: "ncclCommFinalize <label>" lines), for tests
// that check how strata tears down (strata_double_nccl_history).
void record_lifecycle(const char* call, const ncclComm* comm);

// The thread's last NCCL error text (ncclGetLastError).
void set_last_error_text(const std::string& text);
const char* last_error_text();

}  // namespace gpu_double::nccl
