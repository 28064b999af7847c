#include "stop.hpp"

#include <signal.h>

#include <csignal>

namespace tune::stop {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal_number) { g_signal = signal_number; }

}  // namespace

void install() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: calls blocked in MPI or strata carry on; SA_RESETHAND: a
  // second signal takes the default action (the user insists).
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool agreed(MPI_Comm comm) {
  int mine = g_signal != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
}

int signal_seen() { return g_signal; }

}  // namespace tune::stop
