// A signal handler may only make async-signal-safe calls: it uses unlink,
// write and _exit on paths and text prepared beforehand, in fixed storage.
#include "interrupt.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace bench::interrupt {
namespace {

// Rank 0 writes two files at most (-J and --csv).
constexpr int kSlots = 4;
constexpr std::size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
volatile std::sig_atomic_t g_used[kSlots];
volatile std::sig_atomic_t g_rank = -1;
volatile std::sig_atomic_t g_tty = 0;

void say(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;  // nothing to do if stderr is gone
}

void on_signal(int signal_number) {
  bool removed = false;
  for (int k = 0; k < kSlots; ++k)
    if (g_used[k]) removed = unlink(g_paths[k]) == 0 || removed;
  if (g_rank == 0) {
    if (g_tty) say("\r");  // over a pending progress line
    say(signal_number == SIGINT ? "strata-bench: interrupted (SIGINT)" : "strata-bench: interrupted (SIGTERM)");
    say(removed ? ": the -J/--csv output was not complete and is not written\n" : "\n");
  } else {
    // The other ranks leave half a second later: mpirun kills a job's
    // remaining ranks (SIGKILL) as soon as one exits abnormally, and on a
    // busy node rank 0 may not have run its handler yet (4 of 12 runs lost
    // the line with three CPU hogs on 2 cores; 0 of 12 with the pause).
    // Bounded, so a rank never outlives the signal by more.
    const timespec pause{0, 500'000'000};
    nanosleep(&pause, nullptr);
  }
  _exit(kExitInterrupted);
}

}  // namespace

void install(int rank) {
  g_rank = rank;
  g_tty = isatty(STDERR_FILENO) ? 1 : 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);  // one handler at a time
  sigaddset(&action.sa_mask, SIGTERM);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int remember(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (int k = 0; k < kSlots; ++k)
    if (!g_used[k]) {
      std::memcpy(g_paths[k], path.c_str(), path.size() + 1);
      g_used[k] = 1;  // after the path: a handler never sees a slot half-filled
      return k;
    }
  return -1;
}

void release(int slot) {
  if (slot >= 0 && slot < kSlots) g_used[slot] = 0;
}

}  // namespace bench::interrupt
