#include "devices.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "report.hpp"
#include "settings.hpp"

namespace gpu_double {
namespace {

// The bus ids of an 8-GPU server, twice over for up to 16 devices.
const std::array<const char*, 16> kBus = {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                                          "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0",
                                          "0000:08:00.0", "0000:10:00.0", "0000:48:00.0", "0000:4f:00.0",
                                          "0000:88:00.0", "0000:91:00.0", "0000:b8:00.0", "0000:be:00.0"};

struct Table {
  std::vector<std::string> bus;
  std::vector<Stream*> legacy;
  std::unique_ptr<std::atomic<int>[]> sticky;
  std::mutex mutex;  // the handle set and per-thread streams
  std::set<Stream*> streams;  // every handle cudaStreamCreate* gave out (destroyed ones included)
  std::map<std::pair<std::thread::id, int>, Stream*> per_thread;
  std::set<std::pair<int, int>> peers;  // (device, peer) with access enabled
};

Table& table() {
  static Table& t = [] () -> Table& {
    auto* made = new Table;
    const int n = settings().devices;
    made->sticky = std::make_unique<std::atomic<int>[]>(std::size_t(n > 0 ? n : 1));
    for (int d = 0; d < n; ++d) {
      made->bus.emplace_back(kBus[std::size_t(d)]);
      made->legacy.push_back(new Stream(d, StreamKind::legacy, fmt::format("legacy default stream of device {}", d)));
    }
    return *made;
  }();
  return t;
}

thread_local int current = 0;
thread_local cudaError_t last_error = cudaSuccess;

}  // namespace

int device_count() { return settings().devices; }
bool valid_device(int device) { return device >= 0 && device < device_count(); }
const std::string& bus_id(int device) { return table().bus.at(std::size_t(device)); }
int compute_mode(int device) {
  const auto& modes = settings().compute_modes;
  return std::size_t(device) < modes.size() ? modes[std::size_t(device)] : 0;
}

int current_device() { return current; }
void set_current_device(int device) { current = device; }

Stream& legacy_stream(int device) { return *table().legacy.at(std::size_t(device)); }

Stream& per_thread_stream(int device) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  Stream*& s = t.per_thread[{std::this_thread::get_id(), device}];
  if (!s) s = new Stream(device, StreamKind::per_thread, fmt::format("per-thread default stream of device {}", device));
  return *s;
}

Stream* stream_of(const char* call, cudaStream_t handle) {
  if (handle == nullptr || handle == cudaStreamLegacy) {
    if (!valid_device(current)) {
      violation(call, fmt::format("the default stream of device {}, which does not exist", current));
      return nullptr;
    }
    return &legacy_stream(current);
  }
  if (handle == cudaStreamPerThread) return &per_thread_stream(current);
  auto* stream = reinterpret_cast<Stream*>(handle);
  Table& t = table();
  {
    std::lock_guard lock(t.mutex);
    if (!t.streams.count(stream)) {
      violation(call, fmt::format("stream handle {} was not made by cudaStreamCreate", static_cast<void*>(handle)));
      return nullptr;
    }
  }
  if (stream->destroyed()) {
    violation(call, fmt::format("{} ({}) was destroyed", stream->name(), static_cast<void*>(handle)));
    return nullptr;
  }
  return stream;
}

cudaStream_t handle_of(Stream* stream) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.streams.insert(stream);
  return reinterpret_cast<cudaStream_t>(stream);
}

bool enable_peer(int device, int peer) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  return t.peers.insert({device, peer}).second;
}

void fail_device(int device, cudaError_t error) {
  int expected = cudaSuccess;
  table().sticky[std::size_t(device)].compare_exchange_strong(expected, int(error));
}

cudaError_t sticky_error(int device) {
  return valid_device(device) ? cudaError_t(table().sticky[std::size_t(device)].load()) : cudaSuccess;
}

bool device_failed(int device) { return sticky_error(device) != cudaSuccess; }

void set_last_error(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
}
cudaError_t take_last_error() {
  const cudaError_t sticky = sticky_error(current);
  if (sticky != cudaSuccess) return sticky;
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t peek_last_error() {
  const cudaError_t sticky = sticky_error(current);
  return sticky != cudaSuccess ? sticky : last_error;
}

}  // namespace gpu_double
