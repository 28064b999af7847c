// NCCL communicators and how they come to be. They are created
// non-blocking (ncclConfig_t.blocking = 0), collectively over an MPI
// communicator, bounded by the GPU setup limit (topo::setup_seconds(), not
// a call's deadline), and every member ends the creation with the same
// outcome (util::Agreement): no member is left waiting in NCCL's bootstrap
// for a peer that failed.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <span>
#include <string>
#include <vector>

#include "util/deadline.hpp"

namespace strata::nccl {

// A destructor waits at most this long for the GPU (communicators, work).
inline constexpr double kTeardownSeconds = 10;
// A failed call waits at most this long for the work it queued (pack
// kernels, copies, aborted NCCL operations) before it throws.
inline constexpr double kDrainSeconds = 2;

// Poll a non-blocking communicator until its pending operation (init,
// enqueue, group end) is no longer in progress; returns the final state.
// On expiry of `deadline` sets `expired` and returns ncclInProgress.
ncclResult_t settle(ncclComm_t comm, const util::Deadline& deadline, bool& expired);

// Finalizes every communicator of `comms` at once, then waits for all of
// them under the one `bound`: each that settles is destroyed, the rest are
// aborted. Never throws; for teardown, where a dead peer may keep NCCL's
// finalization from ever ending: it then costs the bound once, not once
// per communicator.
void close_all(std::span<const ncclComm_t> comms, const util::Deadline& bound);

// Creates NCCL communicators over MPI communicator `mpi` (collective over
// it): `count` local NCCL ranks per member, on `devices` (NCCL rank =
// member rank x count + i). Rank 0's unique id reaches every member, then
// every member initialises its ranks in one group and polls them. Every
// step ends in an agreement bounded by `bound`: a failure anywhere (unique
// id, init error, the bound passing) raises the same error on every member
// (BackendError, or DeadlineExceeded for the bound), after aborting what
// was created. `name` names the communicator in messages.
std::vector<ncclComm_t> create_comms(MPI_Comm mpi, std::span<const int> devices, const std::string& name,
                                     const util::Deadline& bound);

// One NCCL communicator over the ranks of an MPI communicator.
class Comm {
 public:
  // Collective over `mpi` (see create_comms).
  Comm(MPI_Comm mpi, const std::string& name, int device, const util::Deadline& bound);
  ~Comm();  // close_all of the communicator (bounded), unless released or aborted
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  void abort();  // never throws
  // Hands the communicator to the caller (to close with others at once):
  // null when it was aborted. The object no longer closes it.
  ncclComm_t release();

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  std::string name_;
  bool aborted_ = false;
};

}  // namespace strata::nccl
