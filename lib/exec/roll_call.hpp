// RollCall: who really did not arrive when a call timed out. Each
// communicator has a private duplicate for it. A rank whose deadline passed
// asks every other rank "where are you?" and waits a short window for the
// answers; every rank that is inside strata waiting (in any wait loop, via
// util::IdleWork) answers with the number of the call it is in. Ranks that
// do not answer are stopped, crashed or busy outside strata: the missing
// ones. Ranks that answer from an earlier call have not reached this one,
// but answered from a wait loop: they are waiting themselves (in practice
// on the same missing ranks), so the caller reports them apart, never as
// missing. A neighbour that is itself waiting answers, so it is never
// blamed. When every rank times out
// at once (a hang inside the call), each asks the others: an asker keeps
// answering after its own roll call until every rank that answered from
// this call has asked it too, so that none leaves strata before a slightly
// later asker heard from it.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "util/deadline.hpp"

namespace strata::exec {

class RollCall final : public util::IdleWork {
 public:
  // How long an asker waits for answers: the error comes within timeout +
  // this (+ scheduling), well inside timeout + 1 s.
  static constexpr std::chrono::milliseconds kWindow{500};
  // How long an asker then stays answering ranks that were in the call too
  // but have not asked yet: the error still comes well inside timeout + 1 s.
  static constexpr std::chrono::milliseconds kLinger{300};

  // Collective over `comm` (duplicates it). `current_call` is the number of
  // the call this rank is in, which answers report (the owner's counter).
  RollCall(MPI_Comm comm, const std::atomic<std::uint64_t>* current_call);
  // Frees the duplicate; never throws.
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Answer every pending question (IdleWork: runs while strata waits).
  // Two threads may use the roll call (where MPI allows any thread: the
  // GPU watcher too): one at a time; a thread that finds it busy leaves
  // the answering to the one using it.
  void run() override;

  struct Result {
    std::vector<int> silent;   // no answer within the window: did not arrive (ascending)
    std::vector<int> earlier;  // answered from a call before `sequence`: waiting there (ascending)
  };
  // Asks every other rank, answers theirs meanwhile, and reports; then
  // answers until the ranks that answered from this call have asked too.
  // Never throws (MPI errors count as silence); takes at most kWindow +
  // kLinger.
  Result ask(std::uint64_t sequence);

  // Keeps the duplicate when the roll call goes (util::abandoned_operations_on):
  // questions asked of ranks that never answered, and answers to them, may
  // still arrive on it.
  void keep_communicator() noexcept;

 private:
  void answer();  // run() with mutex_ held

  std::mutex mutex_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  const std::atomic<std::uint64_t>* current_;
  std::vector<std::uint64_t> asked_by_;  // by rank: the latest call number that rank asked about
  // Message buffers MPI may still hold on to after ask() returned (a
  // question to a rank that never received it, a cancelled answer): they
  // live as long as the communicator (a handful per failure).
  std::deque<std::uint64_t> questions_;
  std::deque<std::array<std::uint64_t, 2>> answers_, replies_;
};

}  // namespace strata::exec
