#include "comm.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <set>

#include "report.hpp"

namespace gpu_double::nccl {
namespace {

struct Comms {
  std::mutex mutex;
  std::set<ncclComm*> made;
  std::map<std::string, std::map<int, long>> ranks_by_id;  // segment -> rank -> group (0: none)
};
Comms& comms() {
  static Comms& c = *new Comms;
  return c;
}

thread_local std::string last_text;

}  // namespace

ncclComm* new_comm() {
  auto* c = new ncclComm;
  Comms& all = comms();
  std::lock_guard lock(all.mutex);
  all.made.insert(c);
  return c;
}

ncclComm* comm_of(const char* call, ncclComm_t handle, bool aborted_ok) {
  {
    Comms& all = comms();
    std::lock_guard lock(all.mutex);
    if (!all.made.count(handle)) {
      violation(call, fmt::format("communicator handle {} was not made by ncclCommInitRank", static_cast<void*>(handle)));
      return nullptr;
    }
  }
  const ncclComm::Life life = handle->life.load();
  if (life == ncclComm::Life::destroyed || (life == ncclComm::Life::aborted && !aborted_ok)) {
    violation(call, fmt::format("{} was {}", handle->label,
                                life == ncclComm::Life::destroyed ? "destroyed" : "aborted"));
    return nullptr;
  }
  return handle;
}

void set_error(ncclComm* comm, ncclResult_t error) {
  int expected = ncclSuccess;
  comm->error.compare_exchange_strong(expected, int(error));
}

std::string claim_rank(const ncclUniqueId& id, int rank, long group) {
  Comms& all = comms();
  std::lock_guard lock(all.mutex);
  std::map<int, long>& mine = all.ranks_by_id[segment_name(id)];
  if (mine.count(rank)) return fmt::format("this process already initialised rank {} of this unique id", rank);
  for (const auto& [other, other_group] : mine)
    if (group == 0 || other_group != group) {
      mine[rank] = group;
      return fmt::format("this process initialises ranks {} and {} of one communicator in {}: NCCL needs every rank a "
                         "process drives initialised inside one ncclGroupStart/ncclGroupEnd (one thread waits for "
                         "the others otherwise)",
                         other, rank, group == 0 ? "separate calls outside a group" : "different groups");
    }
  mine[rank] = group;
  return "";
}

namespace {
struct History {
  std::mutex mutex;
  std::string text;
};
History& history() {
  static History& h = *new History;
  return h;
}
}  // namespace

void record_lifecycle(const char* call, const ncclComm* comm) {
  History& h = history();
  std::lock_guard lock(h.mutex);
  h.text += fmt::format("{} {}\n", call, comm->label);
}

void set_last_error_text(const std::string& text) { last_text = text; }
const char* last_error_text() { return last_text.c_str(); }

}  // namespace gpu_double::nccl

// What a test reads: every lifecycle call so far, one per line.
extern "C" const char* strata_double_nccl_history() {
  using namespace gpu_double::nccl;
  static thread_local std::string copy;
  History& h = history();
  std::lock_guard lock(h.mutex);
  copy = h.text;
  return copy.c_str();
}
