#include "group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <unistd.h>

#include "capture.hpp"
#include "devices.hpp"
#include "faults.hpp"
#include "report.hpp"
#include "settings.hpp"

namespace gpu_double::nccl {

struct Held {
  std::vector<std::pair<Stream*, Op>> ops;
  std::vector<ncclComm*> comms;
  std::vector<ncclComm*> owners;  // the communicator of each piece of work (running counts)
  std::chrono::steady_clock::time_point due;
  bool released = false;
};

namespace {

struct Pending {
  const char* call;
  ncclComm* comm;
  Stream* stream;              // null for an initialisation
  std::unique_ptr<Work> work;  // null for an initialisation and for captured work
  bool counted = false;        // counted in stream->grouped (made inside an explicit group)
  Recipe recipe;               // captured work: made at each graph launch
  std::string what;            // captured work, for messages
};

struct GroupState {
  int depth = 0;
  long id = 0;
  std::vector<Pending> pending;
};
thread_local GroupState group;
std::atomic<long> groups_made{0};
std::atomic<int> open_with_work{0};  // threads whose open group holds calls (checked at exit)

std::mutex& held_mutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}

// Seeded: whether a non-blocking end returns ncclInProgress this time.
bool hold_this_time() {
  static std::mutex mutex;
  static std::mt19937_64 random(settings().seed * 7919 + std::uint64_t(settings().world_rank));
  std::lock_guard lock(mutex);
  return random() % 3 == 0;
}

void report_open_group_at_exit() {
  if (open_with_work.load() > 0)
    violation("ncclGroupEnd", "the process ends with an ncclGroupStart whose ncclGroupEnd never came: the calls "
                              "made inside that group never ran");
}
int thread_group_depth() { return group.depth; }

[[gnu::constructor]] void register_with_runtime() {
  std::atexit(report_open_group_at_exit);
  set_group_probe(&thread_group_depth);
}

void join(ncclComm* comm) {
  if (comm->init_fails) {
    set_error(comm, ncclSystemError);
    return;
  }
  Header& h = comm->clique->header();
  int expected = 0;
  if (!h.nranks.compare_exchange_strong(expected, comm->nranks) && expected != comm->nranks) {
    violation("ncclCommInitRank", fmt::format("{}: this rank says nranks = {}, an earlier one said {}", comm->label,
                                              comm->nranks, expected));
    set_error(comm, ncclInvalidArgument);
    return;
  }
  Member& m = h.members[comm->rank];
  int no = 0;
  if (!m.joined.compare_exchange_strong(no, 1)) {
    violation("ncclCommInitRank", fmt::format("{}: rank {} of this unique id joined twice (an id serves one "
                                              "communicator)", comm->label, comm->rank));
    set_error(comm, ncclInvalidUsage);
    return;
  }
  m.device = comm->device;
  m.pid = ::getpid();
  m.world_rank = settings().world_rank;
  std::snprintf(m.host, sizeof m.host, "%s", host_identity().c_str());
  std::snprintf(m.bus, sizeof m.bus, "%s", bus_id(comm->device).c_str());
  h.joined.fetch_add(1);
  comm->clique->ring_doorbell();
}

// Once every rank joined: NCCL's own checks, then live.
ncclResult_t init_state(ncclComm* comm) {
  Header& h = comm->clique->header();
  if (h.joined.load() < comm->nranks) return ncclInProgress;
  for (int a = 0; a < comm->nranks; ++a)
    for (int b = a + 1; b < comm->nranks; ++b) {
      const Member &x = h.members[a], &y = h.members[b];
      if (std::string_view(x.host) == y.host && std::string_view(x.bus) == y.bus) {
        violation("ncclCommInitRank", fmt::format("Duplicate GPU detected on {}: rank {} and rank {} both on the GPU "
                                                  "with bus id {} of host {} (NCCL allows one rank per GPU)",
                                                  comm->label, a, b, x.bus, x.host));
        set_error(comm, ncclInvalidUsage);
        return ncclInvalidUsage;
      }
    }
  comm->life = ncclComm::Life::live;
  return ncclSuccess;
}

Op stream_op(std::vector<std::unique_ptr<Work>> works) {
  Op op;
  for (const auto& w : works) {
    op.label += (op.label.empty() ? "" : "; ") + w->label();
    op.uses.insert(op.uses.end(), w->uses().begin(), w->uses().end());
  }
  if (works.size() > 1) op.label = fmt::format("NCCL group of {}: {}", works.size(), op.label);
  auto shared = std::make_shared<std::vector<std::unique_ptr<Work>>>(std::move(works));
  op.run = [shared] { drive(*shared); };
  return op;
}

// What a captured group's node makes at each graph launch: its works,
// numbered on their communicators now, driven together as one operation.
struct Captured {
  Recipe make;
  ncclComm* comm;
};

Maker replay(std::vector<Captured> recipes) {
  return [recipes = std::move(recipes)] {
    std::vector<std::unique_ptr<Work>> works;
    for (const Captured& r : recipes) {
      const ncclComm::Life life = r.comm->life.load();
      if (life != ncclComm::Life::live || r.comm->aborted.load()) {
        violation("cudaGraphLaunch", fmt::format("the graph replays NCCL work on {}, which is no longer live (it "
                                                 "was finalized, destroyed or aborted): that work is skipped",
                                                 r.comm->label));
        continue;
      }
      std::unique_ptr<Work> w = r.make();
      w->hang = fault_now(Fault::nccl_hang);
      w->error = fault_now(Fault::nccl_error);
      ++r.comm->running;
      works.push_back(std::move(w));
    }
    Op op = stream_op(std::move(works));
    op.label = "graph replay of " + (op.label.empty() ? std::string("nothing") : op.label);
    return op;
  };
}

void release(Held* held) {
  if (held->released) return;
  held->released = true;
  for (auto& [stream, op] : held->ops) {
    --stream->held;
    submit(*stream, std::move(op));
  }
  for (ncclComm* c : held->comms)
    if (c->held == held) c->held = nullptr;
}

}  // namespace

int group_depth() { return group.depth; }
long group_id() { return group.depth ? group.id : 0; }

void group_start() {
  if (group.depth++ == 0) group.id = ++groups_made;
}

ncclResult_t group_end(const char* call) {
  if (group.depth == 0) {
    violation(call, "ncclGroupEnd without a matching ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--group.depth > 0) return ncclSuccess;
  if (!group.pending.empty()) --open_with_work;
  std::vector<Pending> pending = std::move(group.pending);
  group.pending.clear();
  ncclResult_t result = ncclSuccess;

  // Initialisations: join now; blocking ones wait for every rank.
  std::vector<ncclComm*> blocking_inits;
  for (Pending& p : pending)
    if (!p.work && !p.recipe) {
      p.comm->init_held = false;
      join(p.comm);
      if (p.comm->blocking) blocking_inits.push_back(p.comm);
      else p.comm->settle_pending = true, result = ncclInProgress;
    }
  for (ncclComm* c : blocking_inits) {
    wait_until([&] { return c->error.load() != ncclSuccess || init_state(c) != ncclInProgress; }, call,
               [&] { return fmt::format("every rank of {} to join ({} of {} did)", c->label,
                                        c->clique->header().joined.load(), c->nranks); });
    if (c->error.load() != ncclSuccess) result = ncclResult_t(c->error.load());
  }

  // Captured operations: one node of their capture, after every stream's point.
  std::vector<Stream*> captured_streams;
  std::vector<Captured> recipes;
  std::string captured_label;
  for (Pending& p : pending) {
    if (!p.recipe) continue;
    if (p.counted) --p.stream->grouped;
    if (std::find(captured_streams.begin(), captured_streams.end(), p.stream) == captured_streams.end())
      captured_streams.push_back(p.stream);
    recipes.push_back({std::move(p.recipe), p.comm});
    captured_label += (captured_label.empty() ? "" : "; ") + p.what;
  }
  if (!recipes.empty()) {
    if (recipes.size() > 1) captured_label = fmt::format("NCCL group of {}: {}", recipes.size(), captured_label);
    if (record_node(call, captured_streams, captured_label, replay(std::move(recipes))) != cudaSuccess)
      result = ncclUnhandledCudaError;
  }

  // Operations: one stream operation per stream, in call order.
  std::vector<Stream*> streams;
  std::vector<std::vector<std::unique_ptr<Work>>> works;
  std::vector<ncclComm*> comms, owners;
  bool non_blocking = false;
  for (Pending& p : pending) {
    if (!p.work) continue;
    if (p.counted) --p.stream->grouped;
    if (capturing(*p.stream))
      violation(call, fmt::format("{} began capturing while '{}' for it waited in an open ncclGroupStart: that work "
                                  "was made for running now, and runs outside the capture",
                                  p.stream->name(), p.work->label()));
    auto at = std::find(streams.begin(), streams.end(), p.stream);
    if (at == streams.end()) streams.push_back(p.stream), works.emplace_back(), at = streams.end() - 1;
    works[std::size_t(at - streams.begin())].push_back(std::move(p.work));
    if (std::find(comms.begin(), comms.end(), p.comm) == comms.end()) comms.push_back(p.comm);
    non_blocking = non_blocking || !p.comm->blocking;
    owners.push_back(p.comm);
    ++p.comm->running;
  }
  if (streams.empty()) return result;
  if (non_blocking && hold_this_time()) {
    auto* held = new Held;  // kept: a communicator may point to it until it is polled
    held->due = std::chrono::steady_clock::now() + std::chrono::microseconds(200 + settings().world_rank * 50);
    held->comms = comms;
    held->owners = owners;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      ++streams[i]->held;
      streams[i]->held_by = call;
      held->ops.emplace_back(streams[i], stream_op(std::move(works[i])));
    }
    std::lock_guard lock(held_mutex());
    for (ncclComm* c : comms) {
      c->held = held;
      if (!c->blocking) c->settle_pending = true;
    }
    trace(fmt::format("{} returns ncclInProgress: {} stream operation(s) held", call, streams.size()));
    return ncclInProgress;
  }
  for (std::size_t i = 0; i < streams.size(); ++i) submit(*streams[i], stream_op(std::move(works[i])));
  return result;
}

ncclResult_t add_init(const char* call, ncclComm* comm) {
  if (group.depth > 0) {
    comm->init_held = true;
    if (group.pending.empty()) ++open_with_work;
    group.pending.push_back({call, comm, nullptr, nullptr, false, nullptr, ""});
    return ncclSuccess;
  }
  group_start();
  group.pending.push_back({call, comm, nullptr, nullptr, false, nullptr, ""});
  ++open_with_work;
  return group_end(call);
}

ncclResult_t add_work(const char* call, Stream* stream, std::unique_ptr<Work> work) {
  ncclComm* comm = work->comm();
  const bool outside = group.depth == 0;
  if (outside) group_start();
  if (group.pending.empty()) ++open_with_work;
  if (!outside) ++stream->grouped;
  group.pending.push_back({call, comm, stream, std::move(work), !outside, nullptr, ""});
  return outside ? group_end(call) : ncclSuccess;
}

ncclResult_t add_captured(const char* call, Stream* stream, ncclComm* comm, Recipe make, const std::string& what) {
  const bool outside = group.depth == 0;
  if (outside) group_start();
  if (group.pending.empty()) ++open_with_work;
  if (!outside) ++stream->grouped;
  Pending p{call, comm, stream, nullptr, !outside, std::move(make), what};
  group.pending.push_back(std::move(p));
  return outside ? group_end(call) : ncclSuccess;
}

ncclResult_t state_of(const char* call, ncclComm* comm) {
  if (comm->init_held) {
    fatal(call, fmt::format("{}: its initialisation waits in an ncclGroupStart of this thread whose ncclGroupEnd has "
                            "not come, so its state can never change (an ncclGroupEnd skipped on an error path?)",
                            comm->label));
  }
  ncclResult_t state = ncclResult_t(comm->error.load());
  if (state == ncclSuccess && comm->life == ncclComm::Life::joining) state = init_state(comm);
  if (state == ncclSuccess) {
    std::lock_guard lock(held_mutex());
    if (Held* held = comm->held) {
      if (std::chrono::steady_clock::now() >= held->due) release(held);
      else state = ncclInProgress;
    }
  }
  if (state == ncclSuccess && comm->life == ncclComm::Life::finalizing) {
    if (comm->running.load() == 0 && !comm->finalize_hangs) comm->life = ncclComm::Life::finalized;
    else state = ncclInProgress;
  }
  if (state != ncclInProgress) comm->settle_pending = false;
  return state;
}

void drop_held(ncclComm* comm) {
  std::lock_guard lock(held_mutex());
  if (Held* held = comm->held; held && !held->released) {
    held->released = true;
    for (auto& [stream, op] : held->ops) --stream->held;
    for (ncclComm* c : held->owners) --c->running;
    for (ncclComm* c : held->comms)
      if (c->held == held) c->held = nullptr;
  }
}

}  // namespace gpu_double::nccl
