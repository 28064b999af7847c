#include "completion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "comm_cache.hpp"
#include "errors.hpp"
#include "log.hpp"
#include "requests.hpp"
#include "route.hpp"

namespace strata::interpose {
namespace {

// A request array as a completion call sees it: the routed request behind
// each entry (or nullptr), and a copy for MPI in which those entries are
// MPI_REQUEST_NULL (which every MPI call treats as it treats an inactive
// request: skipped, empty status).
class Split {
 public:
  Split(int count, const MPI_Request* requests)
      : mpi_(requests, requests + count), routed_(static_cast<std::size_t>(count), nullptr) {
    for (int i = 0; i < count; ++i) {
      if (Routed* r = find_routed(requests[i])) {
        routed_[i] = r;
        mpi_[i] = MPI_REQUEST_NULL;
        any_routed_ = true;
      } else if (requests[i] != MPI_REQUEST_NULL) {
        any_mpi_ = true;
      }
    }
  }

  bool any_routed() const { return any_routed_; }
  // Whether any entry is one of MPI's own (which may still be inactive).
  bool any_mpi() const { return any_mpi_; }
  MPI_Request* mpi() { return mpi_.data(); }
  Routed* routed(int i) const { return routed_[static_cast<std::size_t>(i)]; }

  // The indices of the active routed entries, in the order they were
  // started; a handle listed twice (erroneous) counts at its first index
  // only, so that it is never reported twice.
  std::vector<int> active_in_order() const {
    std::vector<int> active;
    for (std::size_t i = 0; i < routed_.size(); ++i)
      if (routed_[i] && routed_[i]->active) active.push_back(static_cast<int>(i));
    std::stable_sort(active.begin(), active.end(), [&](int a, int b) { return routed(a)->order < routed(b)->order; });
    active.erase(std::unique(active.begin(), active.end(), [&](int a, int b) { return routed(a) == routed(b); }),
                 active.end());
    return active;
  }

  // After a PMPI_* call: MPI's entries back into the program's array (MPI
  // sets a completed non-persistent request to MPI_REQUEST_NULL).
  void copy_back(MPI_Request* requests) const {
    for (std::size_t i = 0; i < mpi_.size(); ++i)
      if (!routed_[i]) requests[i] = mpi_[i];
  }

 private:
  std::vector<MPI_Request> mpi_;
  std::vector<Routed*> routed_;
  bool any_routed_ = false;
  bool any_mpi_ = false;
};

MPI_Status* status_at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// Before routed requests report into a call's `statuses`: MPI_ERROR =
// MPI_SUCCESS in the first `n`, the ones MPI filled, unless MPI itself
// returned an error (MPI sets MPI_ERROR only when it returns
// MPI_ERR_IN_STATUS), so that MPI_ERR_IN_STATUS for a routed request
// leaves every status saying how its request ended.
void clear_errors(int mpi_rc, MPI_Status statuses[], int n) {
  if (mpi_rc != MPI_SUCCESS || statuses == MPI_STATUSES_IGNORE) return;
  for (int i = 0; i < n; ++i) statuses[i].MPI_ERROR = MPI_SUCCESS;
}

// The return code of a call that completed several requests: MPI's
// (MPI_SUCCESS or MPI_ERR_IN_STATUS), or MPI_ERR_IN_STATUS when a routed
// request failed (its status holds its code).
int completed_many(int mpi_rc, bool routed_failed) {
  if (mpi_rc != MPI_SUCCESS) return mpi_rc;
  return routed_failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

// MPI_Start of a routed request: strata's Request::start, or the error MPI
// gives for starting a request that is not persistent or still active.
int start_routed(const char* call, Routed* r) {
  if (!r->persistent)
    return report_misuse(call, r->comm, MPI_ERR_REQUEST,
                         fmt::format("the request of an {} is not persistent: only persistent requests start",
                                     r->call).c_str());
  if (r->active)
    return report_misuse(call, r->comm, MPI_ERR_REQUEST,
                         "the request is still active: complete it (MPI_Wait, or MPI_Test until true) before "
                         "starting it again");
  // (A request whose first run makes its communicator's strata side, or
  // goes through MPI, starts in that run: Routed::begin.)
  if (!r->begin)
    if (std::exception_ptr error = run_in_strata([&] { r->request.start(); }))
      return report_error(call, r->comm, error);
  mark_started(*r);
  return MPI_SUCCESS;
}

// Waiting for MPI's own requests while routed ones are alive: `test`
// first (what is complete needs nothing else); when it finds nothing
// complete, every active routed request runs before MPI waits (`wait`):
// a peer may be running one of them, waiting for this rank, and reach
// what this rank waits for only after it.
template <typename Test, typename Wait>
int wait_for_mpi(Test test, Wait wait) {
  if (!any_routed()) return wait();
  bool done = false;
  if (const int rc = test(done); rc != MPI_SUCCESS || done) return rc;
  advance_all_routed();
  return wait();
}

// Testing MPI's own requests while routed ones are alive: when `test`
// finds nothing complete, every active routed request runs, and MPI's are
// tested once more, so that a program polling them completes them once
// the peers they wait for could finish the routed collectives.
template <typename Test>
int test_mpi(Test test) {
  bool done = false;
  const int rc = test(done);
  if (rc != MPI_SUCCESS || done || !any_routed()) return rc;
  advance_all_routed();
  return test(done);
}

}  // namespace

int wait(MPI_Request* request, MPI_Status* status) {
  Routed* r = find_routed(*request);
  if (!r)
    return wait_for_mpi(
        [&](bool& done) {
          int flag = 0;
          const int rc = PMPI_Test(request, &flag, status);
          done = flag;
          return rc;
        },
        [&] { return PMPI_Wait(request, status); });
  if (!r->active) {  // an inactive persistent request: done at once
    empty_status(status);
    return MPI_SUCCESS;
  }
  complete(*r);
  return report(r, request, status, false);
}

int test(MPI_Request* request, int* flag, MPI_Status* status) {
  Routed* r = find_routed(*request);
  if (!r)
    return test_mpi([&](bool& done) {
      const int rc = PMPI_Test(request, flag, status);
      done = *flag;
      return rc;
    });
  *flag = 1;
  if (!r->active) {
    empty_status(status);
    return MPI_SUCCESS;
  }
  if (poll(*r)) return report(r, request, status, false);
  not_done_yet();
  *flag = 0;
  return MPI_SUCCESS;
}

namespace {

// PMPI_Waitall through wait_for_mpi. Whether MPI's requests are all
// complete is asked with PMPI_Request_get_status, which frees nothing,
// rather than PMPI_Testall: MPICH (4.0, 5.0.2) and Intel MPI (2021.18) fail
// MPI_Testall when a persistent collective request in the array completes
// (MPI_ERR_IN_STATUS or MPI_ERR_REQUEST), which a program's own
// MPI_Allreduce_init that falls through to MPI is.
int wait_all_mpi(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return wait_for_mpi(
      [&](bool& done) {
        done = true;
        for (int i = 0; i < count && done; ++i) {
          int flag = 0;
          if (const int rc = PMPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
            return rc;
          done = flag != 0;
        }
        return done ? PMPI_Waitall(count, requests, statuses) : MPI_SUCCESS;
      },
      [&] { return PMPI_Waitall(count, requests, statuses); });
}

}  // namespace

int wait_all(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!any_routed() || count <= 0) return PMPI_Waitall(count, requests, statuses);
  Split split(count, requests);
  if (!split.any_routed()) return wait_all_mpi(count, requests, statuses);
  // strata's side first: MPI's own requests complete whatever order this
  // rank waits in, strata's only while this rank runs them.
  const std::vector<int> active = split.active_in_order();
  for (const int i : active) complete(*split.routed(i));
  const int rc = split.any_mpi() ? wait_all_mpi(count, split.mpi(), statuses)
                                 : PMPI_Waitall(count, split.mpi(), statuses);
  split.copy_back(requests);
  clear_errors(rc, statuses, count);
  bool failed = false;
  for (const int i : active) failed |= report(split.routed(i), &requests[i], status_at(statuses, i), true) != 0;
  return completed_many(rc, failed);
}

int test_all(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!any_routed() || count <= 0) return PMPI_Testall(count, requests, flag, statuses);
  Split split(count, requests);
  const auto test_all_mpi = [&](MPI_Request* theirs) {
    return test_mpi([&](bool& done) {
      const int rc = PMPI_Testall(count, theirs, flag, statuses);
      done = *flag;
      return rc;
    });
  };
  if (!split.any_routed()) return test_all_mpi(requests);
  const std::vector<int> active = split.active_in_order();
  bool over = true;
  for (const int i : active) over = poll(*split.routed(i)) && over;
  if (!over) {
    // MPI_Testall changes nothing unless all are complete: the routed
    // requests that are over stay active until a later call reports them.
    advance_all_routed();
    not_done_yet();
    *flag = 0;
    return MPI_SUCCESS;
  }
  const int rc = test_all_mpi(split.mpi());
  if (!*flag) return rc;
  split.copy_back(requests);
  clear_errors(rc, statuses, count);
  bool failed = false;
  for (const int i : active) failed |= report(split.routed(i), &requests[i], status_at(statuses, i), true) != 0;
  return completed_many(rc, failed);
}

namespace {

// What MPI_Waitany, MPI_Testany, MPI_Waitsome and MPI_Testsome ask of an
// array: at most one request (*any) or every one that is over (*some),
// waiting until there is one (Wait*) or not (Test*).
struct Pick {
  bool one;
  bool blocking;
};

// `pick`'s own PMPI_ call on `theirs` (waiting only when `wait`), its
// answer in the *some form: `out` = how many completed (0, or 1 for *any)
// or MPI_UNDEFINED when none was active, their indices in `indices`, their
// statuses in `statuses` (*any: the call's one status).
int mpi_pick(Pick pick, bool wait, int count, MPI_Request* theirs, int* out, int indices[], MPI_Status statuses[]) {
  if (!pick.one)
    return wait ? PMPI_Waitsome(count, theirs, out, indices, statuses)
                : PMPI_Testsome(count, theirs, out, indices, statuses);
  int index = MPI_UNDEFINED, flag = 1;
  const int rc = wait ? PMPI_Waitany(count, theirs, &index, statuses)
                      : PMPI_Testany(count, theirs, &index, &flag, statuses);
  indices[0] = index;
  *out = !flag ? 0 : index == MPI_UNDEFINED ? MPI_UNDEFINED : 1;
  return rc;
}

// `pick` over MPI's requests alone (routed ones alive elsewhere), through
// wait_for_mpi or test_mpi.
int mpi_only(Pick pick, int count, MPI_Request* theirs, int* out, int indices[], MPI_Status statuses[]) {
  const auto test = [&](bool& done) {
    const int rc = mpi_pick(pick, false, count, theirs, out, indices, statuses);
    done = *out != 0;  // some completed, or none active (MPI_UNDEFINED)
    return rc;
  };
  if (!pick.blocking) return test_mpi(test);
  return wait_for_mpi(test, [&] { return mpi_pick(pick, true, count, theirs, out, indices, statuses); });
}

// The four calls over an array with routed requests alive, in the *some
// form (mpi_pick's). Each pass tests MPI's entries (never blocking), then
// reports the routed requests that are over, polling them while nothing
// else has completed (a test polls them all: without a progress thread the
// first poll runs its request to the end, and a test should report what it
// ran). A pass that reports nothing runs every active routed request; a
// test returns then, a wait passes again. *any first reports a routed
// request an MPI_Testall found over but could not report, and a Waitany
// left with routed requests only waits for the oldest.
int pick_requests(Pick pick, int count, MPI_Request requests[], int* outcount, int indices[],
                  MPI_Status statuses[]) {
  Split split(count, requests);
  if (!split.any_routed()) return mpi_only(pick, count, requests, outcount, indices, statuses);
  const std::vector<int> active = split.active_in_order();
  if (active.empty()) {  // only MPI's requests can complete
    const int rc = mpi_only(pick, count, split.mpi(), outcount, indices, statuses);
    split.copy_back(requests);
    return rc;
  }
  const auto report_one = [&](int i) {
    indices[0] = i;
    *outcount = 1;
    return report(split.routed(i), &requests[i], statuses, false);
  };
  if (pick.one)
    for (const int i : active)
      if (split.routed(i)->finished) return report_one(i);
  bool mpi_active = split.any_mpi();
  for (;;) {
    int n = 0, rc = MPI_SUCCESS;
    if (mpi_active) {
      int out = MPI_UNDEFINED;
      rc = mpi_pick(pick, false, count, split.mpi(), &out, indices, statuses);
      split.copy_back(requests);
      if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || (pick.one && out == 1)) {
        *outcount = out;
        return rc;
      }
      if (out == MPI_UNDEFINED) mpi_active = false;
      else n = out;
    }
    if (pick.one) {
      if (pick.blocking && !mpi_active) {
        complete(*split.routed(active.front()));
        return report_one(active.front());
      }
      for (const int i : active)
        if (poll(*split.routed(i))) return report_one(i);
    } else {
      clear_errors(rc, statuses, n);
      bool failed = false;
      for (const int i : active) {
        Routed* r = split.routed(i);
        if (!r->finished && !((n == 0 || !pick.blocking) && poll(*r))) continue;
        indices[n] = i;
        failed |= report(r, &requests[i], status_at(statuses, n), true) != 0;
        ++n;
      }
      if (n > 0) {
        *outcount = n;
        return completed_many(rc, failed);
      }
    }
    advance_all_routed();
    not_done_yet();
    if (!pick.blocking) {
      *outcount = 0;
      return MPI_SUCCESS;
    }
  }
}

// pick_requests for *any: its answer as MPI_Waitany and MPI_Testany give it.
int pick_one(bool blocking, int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  int out = 0;
  const int rc = pick_requests({true, blocking}, count, requests, &out, index, status);
  if (out != 1) *index = MPI_UNDEFINED;
  if (flag) *flag = out != 0;
  return rc;
}

}  // namespace

int wait_any(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!any_routed() || count <= 0) return PMPI_Waitany(count, requests, index, status);
  return pick_one(true, count, requests, index, nullptr, status);
}

int test_any(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!any_routed() || count <= 0) return PMPI_Testany(count, requests, index, flag, status);
  return pick_one(false, count, requests, index, flag, status);
}

int wait_some(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_routed() || count <= 0) return PMPI_Waitsome(count, requests, outcount, indices, statuses);
  return pick_requests({false, true}, count, requests, outcount, indices, statuses);
}

int test_some(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_routed() || count <= 0) return PMPI_Testsome(count, requests, outcount, indices, statuses);
  return pick_requests({false, false}, count, requests, outcount, indices, statuses);
}

int request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  Routed* r = find_routed(request);
  if (!r)
    return test_mpi([&](bool& done) {
      const int rc = PMPI_Request_get_status(request, flag, status);
      done = *flag;
      return rc;
    });
  // Reports nothing and frees nothing: a run that is over stays active
  // (`finished`) until a completion call reports it, error included.
  *flag = !r->active || poll(*r);
  if (*flag) empty_status(status);
  else not_done_yet();
  return MPI_SUCCESS;
}

int request_free(MPI_Request* request) {
  Routed* r = find_routed(*request);
  if (!r) return PMPI_Request_free(request);
  const bool active = r->active;
  if (active) {
    // strata cannot cancel a collective the other ranks take part in, nor
    // leave one running behind a handle that is gone: it completes here.
    if (logging(Level::info))
      log_decision(fmt::format("MPI_Request_free of an active {} request on comm {}: completes it first (strata "
                               "cannot cancel a collective)",
                               r->call, comm_label(r->comm)));
    complete(*r);
  }
  const std::exception_ptr error = active ? std::exchange(r->error, nullptr) : nullptr;
  const int finish_rc = active ? r->finish_rc : MPI_SUCCESS;
  const MPI_Comm comm = r->comm;
  const char* call = r->call;
  remove_routed(r);
  *request = MPI_REQUEST_NULL;
  return error ? report_error(call, comm, error) : finish_rc;
}

int start(MPI_Request* request) {
  Routed* r = find_routed(*request);
  if (!r) return PMPI_Start(request);
  return start_routed("MPI_Start", r);
}

int start_all(int count, MPI_Request requests[]) {
  if (!any_routed() || count <= 0) return PMPI_Startall(count, requests);
  std::vector<Routed*> routed;
  std::vector<MPI_Request> theirs;
  std::vector<int> where;
  for (int i = 0; i < count; ++i) {
    if (Routed* r = find_routed(requests[i])) {
      routed.push_back(r);
    } else {
      theirs.push_back(requests[i]);
      where.push_back(i);
    }
  }
  if (routed.empty()) return PMPI_Startall(count, requests);
  // strata's in array order (the order every rank starts them in), then
  // MPI's, which use other communicators' traffic than strata's.
  for (Routed* r : routed)
    if (const int rc = start_routed("MPI_Startall", r); rc != MPI_SUCCESS) return rc;
  if (theirs.empty()) return MPI_SUCCESS;
  const int rc = PMPI_Startall(static_cast<int>(theirs.size()), theirs.data());
  for (std::size_t k = 0; k < theirs.size(); ++k) requests[where[k]] = theirs[k];
  return rc;
}

int comm_free(MPI_Comm* comm) {
  advance_all_routed();
  return PMPI_Comm_free(comm);
}

int comm_disconnect(MPI_Comm* comm) {
  advance_all_routed();
  return PMPI_Comm_disconnect(comm);
}

}  // namespace strata::interpose
