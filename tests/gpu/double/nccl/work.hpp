// NCCL operations as the double runs them: each is a state machine that
// advances as far as it can without waiting (NCCL progresses the operations
// of a group together, so a group's sends and receives never wait on each
// other's order). A stream operation drives all of one group's work for
// that stream until every piece is done, the communicator is aborted, or a
// rank found a divergence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm.hpp"
#include "stream.hpp"

namespace gpu_double::nccl {

class Work {
 public:
  Work(ncclComm* comm, std::string label) : comm_(comm), label_(std::move(label)) { comm_->clique->hold(); }
  virtual ~Work() { comm_->clique->release(); }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // One pass: true when it changed anything.
  virtual bool advance() = 0;
  bool finished() const { return finished_; }
  ncclComm* comm() const { return comm_; }
  const std::string& label() const { return label_; }
  const std::vector<Range>& uses() const { return uses_; }

  // Fault injection: never advances (nccl-hang), or ends at once with an
  // asynchronous error (nccl-error).
  bool hang = false;
  bool error = false;

  // Stops without finishing (abort, a divergence found elsewhere).
  void stop() { finished_ = true; }

 protected:
  // Device memory of the communicator's device, or null after a violation
  // (the device and the communicator then fail).
  std::byte* device_memory(const char* what, const void* p, std::size_t bytes);
  ncclComm* comm_;
  std::string label_;
  std::vector<Range> uses_;
  bool finished_ = false;
};

// A collective, with its number and first step assigned in call order.
std::unique_ptr<Work> collective(ncclComm* comm, CollKind kind, const void* send, void* recv, std::size_t count,
                                 ncclDataType_t dtype, int op, int root);
std::unique_ptr<Work> send(ncclComm* comm, const void* buffer, std::size_t count, ncclDataType_t dtype, int peer);
std::unique_ptr<Work> receive(ncclComm* comm, void* buffer, std::size_t count, ncclDataType_t dtype, int peer);

// Runs `works` to the end (on a stream worker).
void drive(std::vector<std::unique_ptr<Work>>& works);

// Bytes of one element, or 0 for a type the double does not simulate.
std::size_t nccl_element_bytes(ncclDataType_t dtype);

}  // namespace gpu_double::nccl
