#include "util/thread_role.hpp"

namespace strata::util {
namespace {

thread_local bool progress_thread = false;

}  // namespace

void mark_progress_thread() { progress_thread = true; }
bool on_progress_thread() { return progress_thread; }

}  // namespace strata::util
