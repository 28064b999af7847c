#include "requests.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "guard.hpp"
#include "route.hpp"

namespace strata::interpose {
namespace {

// Placeholder handle -> routed request. Never destroyed: a request the
// program never completed must not be destroyed at exit, when MPI is gone
// (its placeholder cannot be freed then, and its strata Request would wait).
using Table = std::unordered_map<MPI_Request, std::unique_ptr<Routed>>;
Table& table() {
  static auto* routed = new Table;
  return *routed;
}

// Requests the program completed, kept empty with their placeholder handle
// and their table node for the next non-blocking call: a small call then
// costs neither a PMPI_Send_init and PMPI_Request_free nor three
// allocations (MPI_Ibcast + MPI_Wait of 8 bytes at 2 ranks: about 900
// instructions of 4,100). Freed with MPI (release_request_resources).
constexpr std::size_t kSpares = 16;
std::vector<Table::node_type>& spares() {
  static auto* kept = new std::vector<Table::node_type>;
  return *kept;
}
bool spares_closed = false;  // MPI_Finalize began: give handles back at once

std::size_t live = 0;             // table().size(), read on every intercepted completion call
std::uint64_t last_started = 0;   // Routed::order of the request started last
std::size_t unfinished = 0;       // active routed requests whose run is not over: what advancing looks for
MPI_Comm poke_comm = MPI_COMM_NULL;

}  // namespace

bool any_routed() noexcept { return live != 0; }

Routed* find_routed(MPI_Request handle) noexcept {
  if (live == 0 || handle == MPI_REQUEST_NULL) return nullptr;
  const auto found = table().find(handle);
  return found == table().end() ? nullptr : found->second.get();
}

Routed* add_routed(const char* call, MPI_Comm comm, bool persistent, int& rc) {
  if (!spares().empty()) {
    Table::node_type node = std::move(spares().back());
    spares().pop_back();
    Routed* routed = node.mapped().get();
    routed->comm = comm;
    routed->call = call;
    routed->persistent = persistent;
    rc = MPI_SUCCESS;
    table().insert(std::move(node));  // (only a rehash may throw: bad_alloc, and that spare is lost)
    live = table().size();
    return routed;
  }
  if (spares().capacity() < kSpares) spares().reserve(kSpares);  // (remove_routed never allocates)
  auto r = std::make_unique<Routed>();
  // A persistent send to MPI_PROC_NULL: a valid request that MPI treats as
  // inactive until started, and which the interposer never starts.
  rc = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &r->handle);
  if (rc != MPI_SUCCESS) return nullptr;
  r->comm = comm;
  r->call = call;
  r->persistent = persistent;
  Routed* routed = r.get();
  try {
    table().emplace(routed->handle, std::move(r));
  } catch (...) {
    PMPI_Request_free(&routed->handle);
    throw;
  }
  live = table().size();
  return routed;
}

void remove_routed(Routed* r) noexcept {
  MPI_Request handle = r->handle;
  Table::node_type node = table().extract(handle);
  live = table().size();
  {
    InsideStrata inside;  // a Request still running completes in its destructor, calling MPI
    if (!spares_closed && spares().size() < kSpares && spares().capacity() >= kSpares) {
      *node.mapped() = Routed{};  // (its Request, staging and error go now)
      node.mapped()->handle = handle;
      spares().push_back(std::move(node));
      return;
    }
    node = {};
  }
  PMPI_Request_free(&handle);
}

void mark_started(Routed& r) noexcept {
  r.active = true;
  r.finished = false;
  r.order = ++last_started;
  ++unfinished;
}

namespace {

void mark_over(Routed& r, std::exception_ptr error) noexcept {
  r.finished = true;
  --unfinished;
  r.error = error;
}

// Runs `r.begin` once: false while the request goes on in strata.
bool begin_over(Routed& r) noexcept {
  const auto begin = std::exchange(r.begin, nullptr);
  std::optional<int> through_mpi;
  std::exception_ptr error;
  try {
    through_mpi = begin(r);
  } catch (...) {
    error = std::current_exception();
  }
  if (!error && !through_mpi) return false;
  mark_over(r, error);
  r.finish_rc = through_mpi.value_or(MPI_SUCCESS);
  return true;
}

bool poll_one(Routed& r) noexcept {
  if (r.finished) return true;
  if (r.begin && begin_over(r)) return true;
  bool over = false;
  std::exception_ptr error = run_in_strata([&] { over = r.request.test(); });
  if (!error && !over) return false;
  mark_over(r, error);
  // The staging's last step (unpack, move an in-place result) calls MPI:
  // here, on the program's thread, never on strata's progress thread.
  if (!error && r.staged.finish) r.finish_rc = r.staged.finish();
  return true;
}

}  // namespace

void advance_started_before(std::uint64_t order) noexcept {
  if (unfinished == 0) return;
  std::vector<Routed*> earlier;
  try {
    for (const auto& [handle, routed] : table())
      if (routed->active && !routed->finished && routed->order < order) earlier.push_back(routed.get());
  } catch (const std::bad_alloc&) {
    return;  // nothing advanced here: the request's own completion call still runs it
  }
  if (earlier.empty()) return;
  std::sort(earlier.begin(), earlier.end(), [](const Routed* a, const Routed* b) { return a->order < b->order; });
  for (Routed* r : earlier) poll_one(*r);
}

void advance_all_routed() noexcept { advance_started_before(UINT64_MAX); }

bool poll(Routed& r) noexcept {
  if (r.finished) return true;
  advance_started_before(r.order);
  return poll_one(r);
}

void complete(Routed& r) noexcept {
  // Without a progress thread (or where it does not take the request) the
  // first poll runs the request to its end.
  while (!poll(r)) not_done_yet();
}

void not_done_yet() noexcept {
  poke_mpi();
  sched_yield();
}

void empty_status(MPI_Status* status) noexcept {
  if (status == MPI_STATUS_IGNORE) return;
  // MPI's own empty status, as PMPI_Wait gives for MPI_REQUEST_NULL: the
  // fields, and the hidden count and cancelled ones, as MPI sets them.
  static const MPI_Status empty = [] {
    MPI_Request none = MPI_REQUEST_NULL;
    MPI_Status s{};
    PMPI_Wait(&none, &s);
    return s;
  }();
  const int kept = status->MPI_ERROR;
  *status = empty;
  status->MPI_ERROR = kept;
}

int report(Routed* r, MPI_Request* handle, MPI_Status* status, bool in_array_status) noexcept {
  const std::exception_ptr error = std::exchange(r->error, nullptr);
  const int finish_rc = std::exchange(r->finish_rc, MPI_SUCCESS);
  const MPI_Comm comm = r->comm;
  const char* call = r->call;
  r->active = r->finished = false;
  if (!r->persistent) {
    remove_routed(r);
    *handle = MPI_REQUEST_NULL;
  }
  const int code = error ? report_error(call, comm, error) : finish_rc;
  empty_status(status);
  if (status != MPI_STATUS_IGNORE && in_array_status) status->MPI_ERROR = code;
  return code;
}

void poke_mpi() noexcept {
  if (poke_comm == MPI_COMM_NULL) {
    if (PMPI_Comm_dup(MPI_COMM_SELF, &poke_comm) != MPI_SUCCESS) {
      poke_comm = MPI_COMM_NULL;
      return;
    }
    PMPI_Comm_set_errhandler(poke_comm, MPI_ERRORS_RETURN);
  }
  int found = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, poke_comm, &found, MPI_STATUS_IGNORE);
}

void release_request_resources() noexcept {
  if (poke_comm != MPI_COMM_NULL) PMPI_Comm_free(&poke_comm);
  spares_closed = true;
  for (Table::node_type& spare : spares()) PMPI_Request_free(&spare.mapped()->handle);
  spares().clear();
}

}  // namespace strata::interpose
