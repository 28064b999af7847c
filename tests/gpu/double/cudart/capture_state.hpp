// The state behind stream capture (capture.hpp), shared by capture.cpp
// (what captures record) and capture_rules.cpp (what they forbid): every
// ongoing capture and the streams taking part in it, under one lock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capture.hpp"

namespace gpu_double {

struct Capture {
  std::uint64_t id = 0;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  pid_t thread = 0;  // the thread that began it
  bool invalidated = false;
  bool ended = false;
  Graph* graph = nullptr;  // filled while it lasts; handed out or discarded at its end
  // Every stream taking part (the origin and the streams that joined),
  // with its point: the nodes its next node depends on.
  std::map<Stream*, std::vector<std::size_t>> members;

  std::string describe() const;
};

struct Captures {
  std::mutex mutex;
  std::map<Stream*, std::shared_ptr<Capture>> by_stream;  // streams taking part in an ongoing capture
  std::vector<std::shared_ptr<Capture>> ongoing;
  std::uint64_t made = 0;
};

Captures& captures();

namespace capture_detail {

// A misuse of `call`: reported as a violation, the thread's last error set.
cudaError_t refuse(const char* call, cudaError_t code, const std::string& what);
// CUDA's error without a report (what caused it was reported already).
cudaError_t quietly(cudaError_t code);
std::string describe_all(const std::vector<std::shared_ptr<Capture>>& list);
void invalidate(const std::vector<std::shared_ptr<Capture>>& list);
// The calling thread, as captures record it, and its interaction mode.
pid_t thread_id();
cudaStreamCaptureMode thread_mode();

}  // namespace capture_detail
}  // namespace gpu_double
