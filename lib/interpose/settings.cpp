#include "settings.hpp"

#include <mpi.h>
// (Not in the standard-ABI build, STRATA_MPI_ABI: the ABI has no extensions.)
#if !defined(STRATA_MPI_ABI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "log.hpp"

namespace strata::interpose {
namespace {

std::atomic<bool> finalizing{false};
std::atomic<bool> initialized{false};
// Set once every check below passed (MPI running, routing on, no refusing
// fact), cleared when MPI finalizes: then an intercepted call pays one load.
std::atomic<bool> routable{false};

std::string lower(const char* text) {
  std::string s = text ? text : "";
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// STRATA_INTERPOSE: on (default) or off. Anything else is reported once
// and treated as off: a typo must not route calls someone meant to keep
// away from strata.
bool routing_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("STRATA_INTERPOSE");
    const std::string value = lower(env);
    if (!env || value == "on" || value == "1" || value == "yes" || value == "true") return true;
    if (value == "off" || value == "0" || value == "no" || value == "false") return false;
    say(Level::warn, fmt::format("STRATA_INTERPOSE={} is not on or off; routing nothing to strata", env));
    return false;
  }();
  return enabled;
}

// Queried after MPI_Init; the answers cannot change while MPI runs.
struct MpiFacts {
  bool thread_multiple = false;
  bool cuda_aware = false;
};

const MpiFacts& mpi_facts() {
  static const MpiFacts facts = [] {
    MpiFacts f;
    int provided = MPI_THREAD_SINGLE;
    // MPI unable to say: assume the level under which nothing is routed.
    f.thread_multiple = PMPI_Query_thread(&provided) != MPI_SUCCESS || provided == MPI_THREAD_MULTIPLE;
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    // The run-time answer: the library loaded may differ from the headers.
    f.cuda_aware = MPIX_Query_cuda_support() == 1;
#endif
    return f;
  }();
  return facts;
}

}  // namespace

const char* process_refusal() noexcept {
  if (routable.load(std::memory_order_acquire)) [[likely]]
    return nullptr;
  if (!routing_enabled()) return "STRATA_INTERPOSE=off";
  if (finalizing.load(std::memory_order_acquire)) return kMpiNotRunning;
  if (!initialized.load(std::memory_order_acquire)) {
    int init = 0, done = 0;
    if (PMPI_Initialized(&init) != MPI_SUCCESS || PMPI_Finalized(&done) != MPI_SUCCESS || !init || done)
      return kMpiNotRunning;
    initialized.store(true, std::memory_order_release);
  }
  const MpiFacts& facts = mpi_facts();
  if (facts.thread_multiple) return "MPI_THREAD_MULTIPLE";
  if (facts.cuda_aware) return "MPI is CUDA-aware";
  // Unless MPI_Finalize began meanwhile: sequentially consistent, so that
  // either this second look sees its flag or mark_finalizing's clearing
  // comes after this store.
  routable.store(true);
  if (finalizing.load()) {
    routable.store(false);
    return kMpiNotRunning;
  }
  return nullptr;
}

double call_timeout_seconds() noexcept {
  static const double seconds = [] {
    const char* env = std::getenv("STRATA_INTERPOSE_TIMEOUT");
    if (!env || !*env) return 0.0;
    char* end = nullptr;
    const double value = std::strtod(env, &end);
    if (*end != '\0' || !std::isfinite(value) || value < 0) {
      say(Level::warn,
               fmt::format("STRATA_INTERPOSE_TIMEOUT={} is not a number of seconds >= 0; calls have no timeout", env));
      return 0.0;
    }
    return value;
  }();
  return seconds;
}

void mark_finalizing() noexcept {
  finalizing.store(true);
  routable.store(false);
}

}  // namespace strata::interpose
