// Memory strata gives up on: after a timeout, MPI (or NCCL) may still write
// into buffers of the call it abandoned, so they are never freed. They are
// kept here for the life of the process, reachable, which says on purpose
// what would otherwise look like a leak (LeakSanitizer, valgrind).
#pragma once

namespace strata::util {

// Keeps `memory` (from malloc/aligned_alloc, or any handle) alive and
// reachable until the process exits. Thread-safe; never throws (a failed
// append just loses the reference, the memory stays allocated either way).
void keep_forever(void* memory) noexcept;

}  // namespace strata::util
