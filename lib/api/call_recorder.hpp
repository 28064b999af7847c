// A communicator's part in the flight recorder (util/flight_recorder.hpp):
// its flight id, agreed by its ranks, and what Session does around every
// call — record it (started, checked, completed or failed, with its plan)
// and, when it raises a DeadlineExceeded, a Mismatch or a PeerFailure,
// write this process's file (util/flight_file.hpp) before the error
// leaves strata. Internal header.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>

#include "exec/call.hpp"
#include "plan/job.hpp"
#include "strata/errors.hpp"
#include "util/flight_recorder.hpp"

namespace strata::api {

class CallRecorder {
 public:
  // Local, before anything collective: makes the process's ring the first
  // time; InvalidArgument for a bad STRATA_FLIGHT_RECORDS (on every rank
  // alike, before any rank is inside a collective).
  static void prepare();

  // Collective over `comm` (`rank` of `size`), after prepare(): names the
  // process's file and installs its signal handlers the first time (where
  // STRATA_FLIGHT_DIR is set), then agrees on the communicator's flight
  // id, the same on every rank of it and unique in each process.
  void start(MPI_Comm comm, int rank, int size);

  // Runs `work` (the call numbered `sequence`) recorded: started now,
  // then completed or failed, with the plan `current()` names for it.
  // Returns what `work` returns; lets its error through.
  template <typename AnyCall, typename Current, typename Work>
  auto recorded(const AnyCall& call, std::uint64_t sequence, Current&& current, Work&& work) {
    const util::flight::Entry entry = util::flight::begin(facts(call, sequence));
    try {
      auto result = work();
      util::flight::end(entry, util::flight::State::completed, plan_of(current(), sequence));
      return result;
    } catch (...) {
      util::flight::end(entry, util::flight::State::failed, plan_of(current(), sequence));
      throw;
    }
  }

  // Runs `work`; when it raises DeadlineExceeded, Mismatch or PeerFailure,
  // writes the file (where STRATA_FLIGHT_DIR is set) and rethrows. A
  // PeerFailure writes it only when this communicator wrote none before:
  // every call on a broken communicator raises it, and the file that the
  // breaking error wrote says what broke it.
  template <typename Work>
  auto dumping(Work&& work) {
    try {
      return work();
    } catch (const DeadlineExceeded& e) {
      dump("DeadlineExceeded", e.what());
      throw;
    } catch (const Mismatch& e) {
      dump("Mismatch", e.what());
      throw;
    } catch (const PeerFailure& e) {
      if (!dumped_) dump("PeerFailure", e.what());
      throw;
    }
  }

  // Communicator::dump_flight_record(): writes the file now, returns its
  // path. InvalidArgument when STRATA_FLIGHT_DIR is unset or the file
  // cannot be written there (saying why).
  std::string dump_on_demand();

  std::uint32_t id() const { return id_; }

 private:
  util::flight::CallFacts facts(const exec::Call& call, std::uint64_t sequence) const;
  util::flight::CallFacts facts(const exec::BatchCall& call, std::uint64_t sequence) const;
  // The plan's text when `current` is the call numbered `sequence` ("" when
  // it failed before it was planned).
  static std::string_view plan_of(const plan::CallInfo& current, std::uint64_t sequence) {
    return current.sequence == sequence ? current.algorithm : std::string_view();
  }
  void dump(const char* reason, const char* message);

  std::uint32_t id_ = 0;
  int rank_ = 0;
  int size_ = 1;
  bool dumped_ = false;  // a file was written for an error of this communicator
};

}  // namespace strata::api
