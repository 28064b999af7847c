#include "memory.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "report.hpp"
#include "settings.hpp"

namespace gpu_double {
namespace {

constexpr std::size_t kQuarantine = 4096;
constexpr unsigned char kFresh = 0xCB;

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> by_base;
  std::deque<std::uintptr_t> quarantine;
  std::vector<std::size_t> in_use;  // bytes per device
  std::uint64_t serial = 0;
};

Registry& registry() {
  static Registry& r = *new Registry;  // never destroyed: worker threads may outlive static destructors
  return r;
}

std::size_t page_size() {
  static const std::size_t size = std::size_t(::sysconf(_SC_PAGESIZE));
  return size;
}

// The allocation containing address `p`, under the registry's lock.
Allocation* containing(Registry& r, std::uintptr_t p) {
  auto it = r.by_base.upper_bound(p);
  if (it == r.by_base.begin()) return nullptr;
  --it;
  return p < it->first + it->second.mapped ? &it->second : nullptr;
}

struct sigaction previous_segv;

// Host code touched memory that only the device may touch (or memory
// already freed): say which, then let the previous handler (or the default
// action) end the process.
void on_segv(int signal, siginfo_t* info, void* context) {
  Registry& r = registry();
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (r.mutex.try_lock()) {
    if (const Allocation* a = containing(r, address)) {
      const std::string text = fmt::format(
          "strata test double [{}]: VIOLATION: host code {} at 0x{:x}, inside {}: {}\n", who(),
          a->freed ? "touched freed memory" : "dereferenced a device pointer", address, a->describe(),
          a->freed ? "it was freed earlier" : "device memory is reached only by kernels, copies and NCCL");
      [[maybe_unused]] const ssize_t n = ::write(2, text.data(), text.size());
    }
    r.mutex.unlock();
  }
  ::sigaction(SIGSEGV, &previous_segv, nullptr);
  if (previous_segv.sa_flags & SA_SIGINFO) {
    if (previous_segv.sa_sigaction) previous_segv.sa_sigaction(signal, info, context);
  } else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN) {
    previous_segv.sa_handler(signal);
  }
  // Returning re-runs the faulting access under the restored handler.
}

void watch_host_accesses() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGSEGV, &action, &previous_segv);
  });
}

// Keeps the address range reserved without access, releasing its memory.
void reserve_only(std::uintptr_t base, std::size_t mapped) {
  ::mmap(reinterpret_cast<void*>(base), mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
         -1, 0);
}

}  // namespace

std::string Allocation::describe() const {
  return fmt::format("{} allocation #{} of {} bytes at 0x{:x}{}",
                     space == Space::device ? fmt::format("device {}", device) : std::string("pinned host"), serial,
                     size, base, freed ? " (freed)" : "");
}

void* allocate(Space space, int device, std::size_t bytes) {
  watch_host_accesses();
  Registry& r = registry();
  const std::size_t mapped = (std::max<std::size_t>(bytes, 1) + page_size() - 1) / page_size() * page_size();
  {
    std::lock_guard lock(r.mutex);
    if (space == Space::device) {
      if (r.in_use.size() <= std::size_t(device)) r.in_use.resize(std::size_t(device) + 1, 0);
      if (r.in_use[std::size_t(device)] + mapped > settings().memory_bytes) return nullptr;
      r.in_use[std::size_t(device)] += mapped;
    }
  }
  Allocation a;
  a.size = bytes;
  a.mapped = mapped;
  a.space = space;
  a.device = device;
  if (space == Space::device) {
    const int fd = ::memfd_create("strata-double-device-memory", MFD_CLOEXEC);
    void* app = MAP_FAILED;
    void* shadow = MAP_FAILED;
    if (fd >= 0 && ::ftruncate(fd, off_t(mapped)) == 0) {
      app = ::mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
      shadow = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (fd >= 0) ::close(fd);
    if (app == MAP_FAILED || shadow == MAP_FAILED) {
      if (app != MAP_FAILED) ::munmap(app, mapped);
      if (shadow != MAP_FAILED) ::munmap(shadow, mapped);
      std::lock_guard lock(r.mutex);
      r.in_use[std::size_t(device)] -= mapped;
      return nullptr;
    }
    a.base = reinterpret_cast<std::uintptr_t>(app);
    a.shadow = static_cast<std::byte*>(shadow);
  } else {
    void* host = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (host == MAP_FAILED) return nullptr;
    a.base = reinterpret_cast<std::uintptr_t>(host);
    a.shadow = static_cast<std::byte*>(host);
  }
  std::memset(a.shadow, kFresh, bytes);
  std::lock_guard lock(r.mutex);
  a.serial = ++r.serial;
  r.by_base[a.base] = a;
  return reinterpret_cast<void*>(a.base);
}

std::string release(void* p, Space space) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  Allocation* a = containing(r, address);
  if (!a) return fmt::format("0x{:x} was not allocated by the CUDA runtime", address);
  if (a->base != address) return fmt::format("0x{:x} points {} bytes into {}", address, address - a->base, a->describe());
  if (a->freed) return fmt::format("{} is freed twice", a->describe());
  if (a->space != space)
    return fmt::format("{} is {}", a->describe(),
                       space == Space::device ? "pinned host memory (free it with cudaFreeHost)"
                                              : "device memory (free it with cudaFree)");
  a->freed = true;
  if (space == Space::device) {
    ::munmap(a->shadow, a->mapped);
    a->shadow = nullptr;
    r.in_use[std::size_t(a->device)] -= a->mapped;
  }
  reserve_only(a->base, a->mapped);
  r.quarantine.push_back(a->base);
  while (r.quarantine.size() > kQuarantine) {
    const auto old = r.by_base.find(r.quarantine.front());
    ::munmap(reinterpret_cast<void*>(old->first), old->second.mapped);
    r.by_base.erase(old);
    r.quarantine.pop_front();
  }
  return "";
}

Allocation find(const void* p) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Allocation* a = containing(r, reinterpret_cast<std::uintptr_t>(p));
  return a ? *a : Allocation{};
}

std::byte* device_bytes(const char* call, const char* what, const void* p, std::size_t bytes, int device) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const Allocation a = find(p);
  std::string problem;
  if (!p) problem = "is null";
  else if (!a.base) problem = "is not device memory (host memory, or never allocated by cudaMalloc)";
  else if (a.space != Space::device) problem = fmt::format("is pinned host memory, not device memory ({})", a.describe());
  else if (a.freed) problem = fmt::format("points into freed memory: {}", a.describe());
  else if (address + bytes > a.base + a.size)
    problem = fmt::format("needs {} bytes but only {} remain in {}", bytes, a.base + a.size - address, a.describe());
  else if (device >= 0 && a.device != device)
    problem = fmt::format("is on device {}, but the operation runs on device {} ({})", a.device, device, a.describe());
  if (!problem.empty()) {
    violation(call, fmt::format("{} = 0x{:x} ({} bytes) {}", what, address, bytes, problem));
    return nullptr;
  }
  return a.shadow + (address - a.base);
}

bool host_is_pinned(const char* call, const char* what, const void* p, std::size_t bytes, bool* ok) {
  *ok = true;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const Allocation a = find(p);
  std::string problem;
  if (!p) problem = "is null";
  else if (a.base && a.space == Space::device) problem = fmt::format("is device memory ({})", a.describe());
  else if (a.base && a.freed) problem = fmt::format("points into freed memory: {}", a.describe());
  else if (a.base && address + bytes > a.base + a.size)
    problem = fmt::format("needs {} bytes but only {} remain in {}", bytes, a.base + a.size - address, a.describe());
  if (!problem.empty()) {
    violation(call, fmt::format("{} = 0x{:x} ({} bytes, host memory expected) {}", what, address, bytes, problem));
    *ok = false;
    return false;
  }
  return a.base != 0;
}

}  // namespace gpu_double
