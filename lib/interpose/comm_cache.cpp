#include "comm_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>
#include <numeric>
#include <vector>

#include "guard.hpp"
#include "log.hpp"
#include "requests.hpp"
#include "settings.hpp"
#include "util/ranges.hpp"

namespace strata::interpose {
namespace {

int entry_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;

// Entries whose Communicator may still be alive, oldest first. Touched only
// by routed calls and MPI callbacks, which the thread levels we route under
// (SINGLE, FUNNELED, SERIALIZED) never run concurrently. Never destroyed:
// callbacks may run during exit.
std::vector<CommEntry*>& live_entries() {
  static auto* entries = new std::vector<CommEntry*>;
  return *entries;
}

// find_entry_fast's memory: the last communicator found with an entry.
// Cleared when that entry is deleted, so a reused handle never maps to a
// freed entry.
struct LastFound {
  MPI_Comm comm = MPI_COMM_NULL;
  CommEntry* entry = nullptr;
} last_found;

// entry_generation(): bumped whenever an entry goes or loses its
// Communicator.
std::uint64_t generation = 0;

void forget(const CommEntry* entry) noexcept {
  ++generation;
  if (last_found.entry == entry) last_found = {};
}

void destroy_communicator(CommEntry& entry) noexcept {
  if (!entry.strata) return;
  ++generation;
  InsideStrata inside;  // its MPI_Comm_free calls go to MPI, not to us
  try {
    entry.strata.reset();
  } catch (...) {
    // A destructor does not throw; if it ever did, MPI is past caring.
  }
}

// MPI_Comm_free (or MPI_Finalize for the predefined communicators) of a
// communicator that carries an entry.
int delete_entry(MPI_Comm, int, void* value, void*) {
  auto* entry = static_cast<CommEntry*>(value);
  auto& live = live_entries();
  live.erase(std::remove(live.begin(), live.end(), entry), live.end());
  forget(entry);
  // (After the finalize hook the Communicator is gone and MPI may be half
  // shut down: then no log line, which would query MPI.)
  if (entry->strata && logging(Level::trace))
    say(Level::trace, fmt::format("comm {} freed: destroying its strata communicator", entry->label));
  destroy_communicator(*entry);
  delete entry;
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first, while every MPI
// call still works: destroy every Communicator still alive, newest first.
// Their entries stay attached (MPI may still run their delete callbacks
// later, which then only free memory).
int finalize_hook(MPI_Comm, int, void*, void*) {
  mark_finalizing();
  auto& live = live_entries();
  say(Level::trace, fmt::format("MPI_Finalize: destroying {} strata communicator(s) still alive", live.size()));
  for (auto it = live.rbegin(); it != live.rend(); ++it) destroy_communicator(**it);
  live.clear();
  release_request_resources();  // (requests.hpp: its private communicator)
  return MPI_SUCCESS;
}

// "world ranks 0,2-3": the MPI_COMM_WORLD ranks of `comm`'s (local) group,
// ascending, the same on every member. A list longer than a log line wants
// is cut to its ends and a hash of the whole.
std::string world_ranks(MPI_Comm comm, int size) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  std::vector<int> ranks(static_cast<std::size_t>(size)), in_world(ranks.size(), MPI_UNDEFINED);
  std::iota(ranks.begin(), ranks.end(), 0);
  const bool translated = PMPI_Comm_group(comm, &group) == MPI_SUCCESS &&
                          PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS &&
                          PMPI_Group_translate_ranks(group, size, ranks.data(), world, in_world.data()) == MPI_SUCCESS;
  if (group != MPI_GROUP_NULL) PMPI_Group_free(&group);
  if (world != MPI_GROUP_NULL) PMPI_Group_free(&world);
  if (!translated || std::count(in_world.begin(), in_world.end(), MPI_UNDEFINED) > 0)
    return "ranks outside MPI_COMM_WORLD";  // (processes spawned later: no world rank to name them by)
  std::sort(in_world.begin(), in_world.end());
  const std::string text = util::ranges(in_world);
  if (in_world.size() == 1) return "world rank " + text;
  if (text.size() <= 48) return "world ranks " + text;
  std::uint32_t hash = 2166136261u;  // FNV-1a over the ranks
  for (const int r : in_world) hash = (hash ^ static_cast<std::uint32_t>(r)) * 16777619u;
  return fmt::format("world ranks {}..{} #{:08x}", in_world.front(), in_world.back(), hash);
}

// Keyvals and the finalize hook, created on the first routed call.
bool ensure_keyvals() {
  if (entry_keyval != MPI_KEYVAL_INVALID) return true;
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &entry_keyval, nullptr) != MPI_SUCCESS) return false;
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook, &finalize_keyval, nullptr) != MPI_SUCCESS ||
      PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr) != MPI_SUCCESS) {
    PMPI_Comm_free_keyval(&entry_keyval);  // (already failing: nothing more to undo if this fails too)
    entry_keyval = MPI_KEYVAL_INVALID;
    return false;
  }
  return true;
}

}  // namespace

Seat seat_in(MPI_Comm comm) noexcept {
  Seat seat;
  PMPI_Comm_rank(comm, &seat.rank);
  PMPI_Comm_size(comm, &seat.size);
  return seat;
}

CommEntry* find_entry(MPI_Comm comm) noexcept {
  if (entry_keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, entry_keyval, &value, &found) != MPI_SUCCESS || !found) return nullptr;
  return static_cast<CommEntry*>(value);
}

std::uint64_t entry_generation() noexcept { return generation; }

CommEntry* find_entry_fast(MPI_Comm comm) noexcept {
  if (comm == last_found.comm && comm != MPI_COMM_NULL) return last_found.entry;
  CommEntry* entry = find_entry(comm);
  if (entry) last_found = {comm, entry};
  return entry;
}

CommEntry& entry_for(MPI_Comm comm) {
  if (CommEntry* entry = find_entry_fast(comm)) return *entry;
  if (!ensure_keyvals()) throw std::bad_alloc();  // before anything collective
  auto entry = std::make_unique<CommEntry>();
  entry->label = comm_label(comm);
  entry->seat = seat_in(comm);
  std::string failure;
  {
    InsideStrata inside;
    try {
      entry->strata = std::make_unique<Communicator>(comm);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // Some ranks may have failed where others did not: agree, so that every
  // rank takes the same road from here on.
  int all_ok = failure.empty() ? 1 : 0;
  if (PMPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all_ok = 0;
  if (!all_ok) {
    destroy_communicator(*entry);
    entry->unavailable = failure.empty() ? "another rank could not start strata on this communicator" : failure;
    say(Level::warn, fmt::format("strata could not start on comm {}; its calls go to MPI: {}", entry->label,
                                      entry->unavailable));
  }
  // Setting an attribute with a valid key on a valid communicator fails only
  // when MPI is out of memory.
  if (PMPI_Comm_set_attr(comm, entry_keyval, entry.get()) != MPI_SUCCESS) {
    destroy_communicator(*entry);
    throw std::bad_alloc();
  }
  CommEntry* kept = entry.release();
  if (kept->strata) live_entries().push_back(kept);
  last_found = {comm, kept};
  return *kept;
}

std::string comm_label(MPI_Comm comm) noexcept {
  if (comm == MPI_COMM_NULL) return "MPI_COMM_NULL";
  try {
    if (const CommEntry* entry = find_entry(comm); entry && !entry->label.empty()) return entry->label;
    int size = 0;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return "(not a communicator)";
    char name[MPI_MAX_OBJECT_NAME] = {};
    int length = 0;
    if (PMPI_Comm_get_name(comm, name, &length) != MPI_SUCCESS) length = 0;
    const std::string who = length > 0 ? std::string(name, static_cast<std::size_t>(length)) : world_ranks(comm, size);
    return fmt::format("{} ({} rank{})", who, size, size == 1 ? "" : "s");
  } catch (...) {
    return "(a communicator)";
  }
}

}  // namespace strata::interpose
