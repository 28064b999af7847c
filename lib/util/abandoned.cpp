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

}  // namespace

void keep_forever(void* memory) noexcept {
  if (!memory) return;
  try {
    std::lock_guard lock(kept_mutex);
    kept().push_back(memory);
  } catch (...) {
  }
}

}  // namespace strata::util
