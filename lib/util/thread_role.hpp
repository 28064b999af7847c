// Which role the calling thread plays for strata: the application's own
// thread, or a communicator's progress thread (which may call MPI only
// under MPI_THREAD_MULTIPLE). Set once by the progress thread itself.
#pragma once

namespace strata::util {

// Marks the calling thread as a progress thread, for its lifetime.
void mark_progress_thread();
// Whether the calling thread is a progress thread.
bool on_progress_thread();

}  // namespace strata::util
