// What strata gives up on after a timeout. Memory: MPI (or NCCL) may still
// write into buffers of the call it abandoned, so they are never freed.
// Communicators: an operation given up on (a non-blocking collective, which
// MPI cannot cancel, or a pending send or receive) stays in MPI's progress
// engine and still uses its communicator, so a communicator with such
// operations is never freed either (Open MPI 4.1 crashed in a later MPI
// call's progress when it was: the operation's next step ran on the freed
// communicator). Both are kept here for the life of the process, reachable,
// which says on purpose what would otherwise look like a leak
// (LeakSanitizer, valgrind).
#pragma once

#include <mpi.h>

namespace strata::util {

// Keeps `memory` (from malloc/aligned_alloc, or any handle) alive and
// reachable until the process exits. Thread-safe; never throws (a failed
// append just loses the reference, the memory stays allocated either way).
void keep_forever(void* memory) noexcept;

// Notes that an operation on `comm` was given up on while still pending
// (every path that abandons an MPI request calls it). Thread-safe; never
// throws.
void abandoned_operations_on(MPI_Comm comm) noexcept;

// Frees one of strata's own communicators (MPI_Comm_free) unless an
// operation on it was given up on (abandoned_operations_on): then it is kept,
// never freed. `comm` becomes MPI_COMM_NULL either way; MPI_COMM_NULL is
// left alone. For destructors and failure paths: never throws.
void free_comm(MPI_Comm& comm) noexcept;

}  // namespace strata::util
