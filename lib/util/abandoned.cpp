#include "util/abandoned.hpp"

#include <mutex>
#include <vector>

namespace strata::util {
namespace {

std::mutex kept_mutex;
// Never destroyed (a function-local static pointer), so the references
// outlive every other static and the memory stays reachable at exit.
std::vector<void*>& kept() {
  static auto* list = new std::vector<void*>;
  return *list;
}

// Communicators with operations given up on (never destroyed, as above).
std::vector<MPI_Comm>& abandoned_comms() {
  static auto* list = new std::vector<MPI_Comm>;
  return *list;
}

}  // namespace

void keep_forever(void* memory) noexcept {
  if (!memory) return;
  try {
    std::lock_guard lock(kept_mutex);
    kept().push_back(memory);
  } catch (...) {
  }
}

void abandoned_operations_on(MPI_Comm comm) noexcept {
  if (comm == MPI_COMM_NULL) return;
  try {
    std::lock_guard lock(kept_mutex);
    std::vector<MPI_Comm>& list = abandoned_comms();
    for (MPI_Comm c : list)
      if (c == comm) return;
    list.push_back(comm);
  } catch (...) {
  }
}

void free_comm(MPI_Comm& comm) noexcept {
  if (comm == MPI_COMM_NULL) return;
  bool keep = false;
  {
    std::lock_guard lock(kept_mutex);
    for (MPI_Comm c : abandoned_comms()) keep = keep || c == comm;
  }
  if (!keep) MPI_Comm_free(&comm);  // (an error freeing leaves nothing else to undo)
  comm = MPI_COMM_NULL;
}

}  // namespace strata::util
