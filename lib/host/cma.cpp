#include "host/cma.hpp"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "util/check.hpp"
#include "util/log.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::host::cma {
namespace {

// Yama's ptrace_scope, or -1 where Yama is absent.
int ptrace_scope() {
  std::ifstream file("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  if (!(file >> scope)) return -1;
  return scope;
}

std::string reason(int error) {
  switch (error) {
    case kTurnedOff: return "STRATA_CMA=0";
    case kCrowded:
      return "more local ranks than the CPUs they may run on, where the rounds wait less (STRATA_CMA=1 reads "
             "directly anyway)";
    case kWrongBytes: return "process_vm_readv returned other bytes than the peer published";
    case EPERM:
    case EACCES:
      return fmt::format("process_vm_readv: {} (errno {}; Yama's ptrace_scope is {}, or a container forbids it)",
                         std::strerror(error), error, ptrace_scope());
    case ENOSYS: return fmt::format("process_vm_readv: {} (errno {}; the kernel lacks it)", std::strerror(error), error);
    default: return fmt::format("process_vm_readv: {} (errno {})", std::strerror(error), error);
  }
}

}  // namespace

Mode mode_from_environment() {
  static const Mode mode = [] {
    const char* env = std::getenv("STRATA_CMA");
    if (env && std::strcmp(env, "0") == 0) return Mode::off;
    if (env && std::strcmp(env, "1") == 0) return Mode::forced;
    return Mode::automatic;
  }();
  return mode;
}

void allow_peers() {
  static const bool done = [] {
#ifdef PR_SET_PTRACER
    // Only scope 1 restricts attaching to ancestors, and only there does a
    // declaration help; elsewhere the call would widen nothing useful.
    if (ptrace_scope() == 1) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    return true;
  }();
  (void)done;
}

int try_read(pid_t pid, const void* remote, void* local, std::size_t bytes) {
  iovec to{local, bytes};
  iovec from{const_cast<void*>(remote), bytes};
  const ssize_t got = process_vm_readv(pid, &to, 1, &from, 1, 0);
  if (got < 0) return errno;
  return static_cast<std::size_t>(got) == bytes ? 0 : EIO;
}

bool agree(MPI_Comm node_comm, int error, int peer) {
  int size = 1;
  STRATA_CHECK_MPI(MPI_Comm_size(node_comm, &size));
  const int mine[2] = {error, peer};
  std::vector<int> all(2 * static_cast<std::size_t>(size));
  STRATA_CHECK_MPI(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, node_comm));
  for (int r = 0; r < size; ++r) {
    const int e = all[2 * static_cast<std::size_t>(r)], p = all[2 * static_cast<std::size_t>(r) + 1];
    if (e == 0) continue;
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true))
      util::log(util::LogLevel::info,
                "shared-memory collectives copy every byte twice (no single-copy direct path): {}",
                e == kTurnedOff || e == kCrowded ? fmt::format("local rank {} has {}", r, reason(e))
                                : fmt::format("local rank {} could not read local rank {}: {}", r, p, reason(e)));
    return false;
  }
  return true;
}

void read(pid_t pid, const void* remote, void* local, std::size_t bytes, int peer) {
  auto* to = static_cast<std::byte*>(local);
  auto from = reinterpret_cast<std::uintptr_t>(remote);
  while (bytes > 0) {
    iovec l{to, bytes};
    iovec r{reinterpret_cast<void*>(from), bytes};
    const ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // 0 bytes from a non-empty request: no progress would ever come (the
      // kernel reports a fault on the first page this way); say EFAULT.
      const int error = got < 0 ? errno : EFAULT;
      throw BackendError(
          fmt::format("strata [{}]: reading {} bytes of local rank {}'s memory (pid {}, address {:#x}) with "
                      "process_vm_readv failed: {} (errno {}); {}. STRATA_CMA=0 turns the single-copy path off",
                      util::where(), bytes, peer, pid, from, std::strerror(error), error,
                      error == ESRCH    ? "the peer process exited"
                      : error == EFAULT ? "the peer's buffer is not mapped that far (do all ranks pass the same count?)"
                      : error == EPERM  ? "the kernel no longer lets this process read the peer"
                                        : "the kernel refused the read"),
          "cma", error, util::hostname(), util::world_rank());
    }
    to += got;
    from += static_cast<std::uintptr_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
}

}  // namespace strata::host::cma
