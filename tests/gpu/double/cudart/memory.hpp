// Device and pinned host memory, and the checks of every pointer the API is
// given. Device memory is a memfd mapped twice: the address the program gets
// has no access rights, so host code that dereferences a device pointer
// crashes at once with a message naming the allocation (a SIGSEGV handler),
// as it would on a real GPU; the double reads and writes a second mapping
// (the shadow). Freed memory keeps its address reserved without access for a
// while (a quarantine of the last 4096 frees), so later uses are recognised
// as uses after free, by the double's checks and by host code alike. New
// memory is filled with 0xCB, so a read of data never written shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpu_double {

enum class Space { device, pinned };

struct Allocation {
  std::uintptr_t base = 0;  // the address the program holds
  std::size_t size = 0;     // bytes asked for
  std::size_t mapped = 0;   // bytes reserved (whole pages)
  Space space = Space::device;
  int device = -1;             // for device memory
  std::byte* shadow = nullptr; // where the double accesses it (pinned: base itself)
  bool freed = false;
  std::uint64_t serial = 0;    // allocation number in this process, for messages
  std::string describe() const;  // "device 1 allocation #7 of 4096 bytes at 0x..."
};

// New memory; nullptr when the device's memory (Settings::memory_bytes) or
// the system cannot hold it (not a violation: real allocations fail too).
void* allocate(Space space, int device, std::size_t bytes);

// Frees what allocate() returned. Returns "" or why it is not allowed
// (unknown pointer, an interior pointer, freed twice, the other space).
std::string release(void* p, Space space);

// The allocation holding `p` (live or quarantined), copied; base == 0 when
// none does.
Allocation find(const void* p);

// `bytes` bytes at device pointer `p` as the double may access them, or
// nullptr after a violation in `call` (not device memory, freed, on another
// device than `device` when device >= 0, or too short). `what` names the
// argument in the message.
std::byte* device_bytes(const char* call, const char* what, const void* p, std::size_t bytes, int device);

// Host memory at `p`: whether it is pinned (allocated by cudaHostAlloc or
// cudaMallocHost and live). A device pointer or a freed pinned block is a
// violation (returns false, `ok` false).
bool host_is_pinned(const char* call, const char* what, const void* p, std::size_t bytes, bool* ok);

}  // namespace gpu_double
