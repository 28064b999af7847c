// The flight recorder's signal handlers: a fatal signal (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT) writes the file (util/flight_file.hpp) and then
// goes on as it would have without strata: to the handler installed before
// (MPI's, the application's) or the default action; SIGUSR1 writes the
// file and goes on (to a handler installed before, if any). Internal
// header.
#pragma once

namespace strata::util::flight {

// Installs the handlers once per process, only when the file is enabled
// (STRATA_FLIGHT_DIR set: a program that did not ask for the recorder's
// file keeps its signals as they are). Call after configure_file.
void install_signal_handlers();

}  // namespace strata::util::flight
