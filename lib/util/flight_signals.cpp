// Signal handlers for the flight recorder. The handler itself writes the
// file: the writer is async-signal-safe (util/flight_file.cpp), and a
// crashing process has no other thread to trust.
#include "util/flight_signals.hpp"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include "util/flight_file.hpp"

namespace strata::util::flight {
namespace {

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kSignals = 65;  // above every signal number handled here
struct sigaction g_previous[kSignals];
std::atomic<bool> g_crashing{false};
std::once_flag g_installed;

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGUSR1: return "SIGUSR1";
  }
  return "signal";
}

// Calls the handler that was there before, as the kernel would have.
void call_previous(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[sig];
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

void on_fatal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  // Only the first: a second fault (in another thread, or in the writer)
  // goes straight on.
  if (!g_crashing.exchange(true)) write_file(signal_name(sig), "a fatal signal");
  errno = saved;
  // Put the previous action back and let the signal happen again as it
  // would have: a fault (si_code > 0) re-executes the faulting instruction
  // once this returns; a sent one (abort(), kill: si_code <= 0) is raised
  // again here, delivered on return since the handler blocks it.
  sigaction(sig, &g_previous[sig], nullptr);
  if (!info || info->si_code <= 0) raise(sig);
}

void on_dump_request(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  write_file(signal_name(sig), "asked for by SIGUSR1");
  errno = saved;
  call_previous(sig, info, context);  // (the default action would end the process: not taken)
}

void install(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction action {};
  action.sa_sigaction = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(sig, &action, &g_previous[sig]);
}

}  // namespace

void install_signal_handlers() {
  if (!file_enabled()) return;
  std::call_once(g_installed, [] {
    for (const int sig : kFatal) install(sig, on_fatal);
    install(SIGUSR1, on_dump_request);
  });
}

}  // namespace strata::util::flight
