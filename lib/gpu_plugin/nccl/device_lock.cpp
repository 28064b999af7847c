#include "gpu_plugin/nccl/device_lock.hpp"

#include <algorithm>
#include <map>
#include <memory>

namespace strata::nccl {
namespace {

std::mutex& lock_of(int device) {
  static std::mutex table_mutex;
  static auto* table = new std::map<int, std::unique_ptr<std::mutex>>;  // never freed: threads may outlive exit
  std::lock_guard guard(table_mutex);
  std::unique_ptr<std::mutex>& m = (*table)[device];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace

std::unique_lock<std::mutex> lock_device(int device) { return std::unique_lock(lock_of(device)); }

std::vector<std::unique_lock<std::mutex>> lock_devices(std::span<const int> devices) {
  std::vector<int> sorted(devices.begin(), devices.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (int device : sorted) locks.push_back(lock_device(device));
  return locks;
}

}  // namespace strata::nccl
