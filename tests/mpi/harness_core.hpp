// The MPI test harness's core, which every MPI test program in tests/
// links (mpi_harness_core in tests/mpi/meson.build): the watchdog, the
// per-rank checks and the rank helpers. It needs MPI and the C++ standard
// library only, never strata, so the interposer's plain MPI programs link
// it too. The doctest main (harness.hpp) is built on it.
#pragma once

#include "harness_checks.hpp"
#include "harness_ranks.hpp"
#include "harness_watchdog.hpp"
