// Agreement on a setup step that may fail on some ranks only (creating the
// GPU backend, an NCCL unique id, an NCCL communicator): every member ends
// the step with the same outcome — success, or the lowest failing rank's
// error, raised with the same type and text on every member — and none is
// left waiting in a peer's setup. Bounded by the step's own limit (never
// unbounded, also when the call that triggered it has no timeout).
//
//   util::Agreement step(comm, "creating the node NCCL communicator", util::Deadline(300));
//   if (!local_work_ok) step.fail(util::Agreement::Kind::backend, why);
//   ... while waiting for something slow: if (step.peer_failed()) give up ...
//   step.throw_if_failed();   // collective
//
// A failing rank tells every other member at once (a small non-blocking
// message on a tag of its own), so members stuck in a long local wait, such
// as NCCL's bootstrap, can poll peer_failed() and give up; conclude() then
// gathers who failed, receives those messages and broadcasts the lowest
// failing rank's reason.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/deadline.hpp"

namespace strata::util {

class Agreement {
 public:
  // Which strata error a failure raises (the same on every member).
  enum class Kind { backend = 0, deadline = 1, unavailable = 2, invalid = 3 };
  struct Failure {
    int rank = -1;  // in the agreement's communicator
    Kind kind = Kind::backend;
    std::string reason;  // as the failing rank gave it (without its location)
    std::string where;   // the failing rank's "host:rank" (util::where)
  };

  // Every member of `comm` constructs one for the same step, in the same
  // order. `step` names it in messages ("creating the node NCCL
  // communicator"); `bound` must be bounded.
  Agreement(MPI_Comm comm, std::string step, const Deadline& bound);
  // Leaves operations still in flight to complete on their own, leaking
  // the buffers they use (a given-up operation may complete later). Never
  // throws.
  ~Agreement();
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;

  // This rank failed: tell every other member now (non-blocking). Only the
  // first call counts.
  void fail(Kind kind, std::string reason);
  bool failed() const { return failed_; }

  // Whether another member has announced a failure. Never blocks.
  bool peer_failed();

  // Collective: the lowest failing rank's failure, the same on every
  // member, or nullopt when none failed. Throws DeadlineExceeded when the
  // bound passes before every member arrived, BackendError when MPI fails.
  std::optional<Failure> conclude();

  // conclude(), then raise the failure, if any, as its Kind with the text
  // "strata [<the failing rank's host:rank>]: <step> failed on rank R:
  // <reason>" (identical on every member).
  void throw_if_failed();

 private:
  struct Verdict;
  struct Buffers;
  // Waits for pending_ until the bound passes (then DeadlineExceeded,
  // leaving pending_ for the destructor).
  void wait(const char* what);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::string step_;
  Deadline bound_;
  bool failed_ = false;
  Kind kind_ = Kind::backend;
  std::string reason_;
  std::unique_ptr<Buffers> buffers_;  // every MPI buffer (see agree.cpp)
  std::vector<MPI_Request> sends_;    // this rank's failure notices
  std::vector<MPI_Request> pending_;  // what conclude() waits for
  bool collective_ = false;           // pending_ holds a collective's request (never freed)
};

// The tag Agreement's notices travel on (no algorithm uses it).
inline constexpr int kAgreementTag = 0x5e7a;

}  // namespace strata::util
