// Requests routed to strata, behind the MPI_Request handles the program
// holds (docs/INTERPOSER.md, "Non-blocking and persistent collectives").
//
// The handle a routed MPI_Iallreduce (or MPIX_Allreduce_init) returns is a
// placeholder: an inactive persistent send to MPI_PROC_NULL
// (PMPI_Send_init), a real MPI request that MPI never sees started. So the
// program may keep it in arrays with MPI's own requests, copy it, compare
// it with MPI_REQUEST_NULL, and the same handle survives any number of
// MPI_Start calls. A table maps it to the strata Request it stands for; the
// intercepted completion calls (completion.cpp) complete strata's side of
// every handle they find there and hand MPI the rest of the array with
// those entries set to MPI_REQUEST_NULL. A handle MPI_Request_free'd or
// completed (non-persistent) goes back to MPI (PMPI_Request_free).
//
// Threads: only the application's thread touches the table, and only at
// thread levels where MPI calls do not overlap (nothing is routed under
// MPI_THREAD_MULTIPLE, so the table stays empty there). strata's progress
// thread never calls MPI nor this code; everything here that calls MPI
// (placeholders, unpacking, error handlers) runs on the application's
// thread, inside its MPI call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "staging.hpp"
#include "strata/request.hpp"

namespace strata::interpose {

struct Routed {
  MPI_Request handle = MPI_REQUEST_NULL;  // the placeholder the program holds
  Request request;                        // strata's side
  MPI_Comm comm = MPI_COMM_NULL;          // the program's: error handler, log lines
  const char* call = "";                  // the call that made it, naming its errors
  bool persistent = false;
  // Started, and its completion not yet returned to the program (MPI's
  // "active"). Stays true after strata's run is over (`finished`) until a
  // completion call reports it.
  bool active = false;
  bool finished = false;           // strata's run is over and `finish` has run (or the run failed)
  std::exception_ptr error;        // the run's, until reported
  int finish_rc = MPI_SUCCESS;     // the staging's finish step's MPI code
  std::uint64_t order = 0;         // when it was started: requests are completed in this order
  Staged staged;                   // the buffers strata runs on (packed bytes), and the finish step
  // Set where the call started on a communicator without a strata side
  // yet (started.hpp): makes that side (a collective step) and starts
  // `request` when the request's turn comes, on the application's thread;
  // or, where strata cannot start there, runs the call through MPI's
  // blocking form and returns MPI's code (the run is then over). Throws
  // what making the side or starting the request raised.
  std::function<std::optional<int>(Routed&)> begin;
};

// Whether any routed request exists: false lets every completion call go
// straight to MPI. Never throws.
bool any_routed() noexcept;

// The routed request behind `handle`, or nullptr. Never throws.
Routed* find_routed(MPI_Request handle) noexcept;

// A new routed request with its placeholder handle, not started; `rc`
// receives PMPI_Send_init's code (nullptr then). Throws std::bad_alloc.
Routed* add_routed(const char* call, MPI_Comm comm, bool persistent, int& rc);

// Gives the placeholder back to MPI and forgets `r` (destroying its strata
// Request, which completes a run still going: callers complete it first).
// Never throws.
void remove_routed(Routed* r) noexcept;

// Marks `r` started now (active, next in order).
void mark_started(Routed& r) noexcept;

// Advances strata's side of an active request as Request::test() does
// (first running its `begin`, if it has one):
// true once the run is over (then `finished`, `error`, and on success the
// finish step's `finish_rc`, are set). Without a progress thread, or where
// it does not take the request, test() runs the request here to its end,
// waiting for the other ranks; with one, it returns false while the thread
// runs it. Every active routed request started before `r`, on any
// communicator, is advanced first (advance_started_before). Never throws.
bool poll(Routed& r) noexcept;

// Advances, in the order they were started, every active routed request
// started before `order` whose run is not over: each runs here to its end
// unless strata's progress thread runs it (then it is left to the thread).
// So every rank runs the routed collectives in the one order they all
// started them, whichever request each waits for first: a rank waiting for
// a request on one communicator while a peer waits for an earlier one on
// another would otherwise wait for each other (MPICH's coll/nonblocking3
// hung so). Errors stay in each request until a completion call reports it.
// Never throws.
void advance_started_before(std::uint64_t order) noexcept;

// advance_started_before every active routed request: what a call does
// before it waits in MPI (for MPI's own requests, or in a collective that
// falls through), where a peer may be running one of them, waiting for
// this rank. Nothing when no routed request exists. Never throws.
void advance_all_routed() noexcept;

// Returns once the run is over: poll until true, with not_done_yet()
// between polls that find it still running on the progress thread.
// Never throws.
void complete(Routed& r) noexcept;

// What a call does when it finds a routed request still running on
// strata's progress thread: one turn of MPI's progress engine (poke_mpi),
// so that the program's own MPI requests keep moving as they would inside
// MPI_Test or MPI_Wait, and the core left to the progress thread
// (sched_yield): a program polling MPI_Test in a loop would otherwise keep
// it from the thread that completes the request (on this 2-core VM an 8 B
// MPI_Iallreduce polled so took 3-4 ms, the progress threads waiting for a
// time slice). Never throws.
void not_done_yet() noexcept;

// Reports a finished request to the program, as a completion call does:
// MPI's empty status (MPI_SOURCE = MPI_ANY_SOURCE, MPI_TAG = MPI_ANY_TAG,
// count 0, not cancelled) into `status` unless MPI_STATUS_IGNORE, its
// MPI_ERROR set to the code only when `in_array_status` (MPI sets it only
// where a call returns MPI_ERR_IN_STATUS; the single-request calls leave
// it); the request becomes inactive, and a non-persistent one is removed
// and *handle set to MPI_REQUEST_NULL. Returns MPI_SUCCESS, the MPI code
// of strata's error (after the WARN line and the communicator's error
// handler, errors.hpp), or the finish step's code (MPI has called the
// handler). Never throws.
int report(Routed* r, MPI_Request* handle, MPI_Status* status, bool in_array_status) noexcept;

// Fills `status` (unless MPI_STATUS_IGNORE) with MPI's empty status,
// keeping its MPI_ERROR. Never throws.
void empty_status(MPI_Status* status) noexcept;

// One turn of MPI's progress engine (PMPI_Iprobe on a private duplicate
// of MPI_COMM_SELF, which no message ever matches). Never throws.
void poke_mpi() noexcept;

// MPI_Finalize is starting (the MPI_COMM_SELF hook): frees what this file
// made in MPI. Never throws.
void release_request_resources() noexcept;

}  // namespace strata::interpose
