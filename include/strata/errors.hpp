// The error hierarchy. Every strata failure is a strata::Error; the subclass
// says what kind of failure it is and the message says where (rank, host,
// collective, sequence number) and what to do.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace strata {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input, detected before anything was sent (no peer is left waiting).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A call's timeout expired. `waiting_for()` lists the ranks this rank was
// still waiting on (empty when the backend cannot tell). The communicator
// refuses further calls afterwards.
class DeadlineExceeded : public Error {
 public:
  DeadlineExceeded(const std::string& what, std::vector<int> waiting_for)
      : Error(what), waiting_for_(std::move(waiting_for)) {}
  const std::vector<int>& waiting_for() const { return waiting_for_; }

 private:
  std::vector<int> waiting_for_;
};

// Ranks disagreed about a call (collective, count, dtype, op, root, a
// batch's tensors or packing, spec, implementation or chunk_bytes). Raised
// on every rank before any data moved; the communicator stays usable.
class Mismatch : public Error {
 public:
  using Error::Error;
};

// A peer failed or an earlier call broke the communicator.
class PeerFailure : public Error {
 public:
  using Error::Error;
};

// A feature that is not available here (no GPU, built without CUDA, ...).
class Unavailable : public Error {
 public:
  using Error::Error;
};

// A return code from MPI, CUDA or NCCL, turned into an exception at the call
// site.
class BackendError : public Error {
 public:
  BackendError(const std::string& what, std::string backend, int code, std::string host, int rank)
      : Error(what), backend_(std::move(backend)), code_(code), host_(std::move(host)), rank_(rank) {}
  const std::string& backend() const { return backend_; }
  int code() const { return code_; }
  const std::string& host() const { return host_; }
  int rank() const { return rank_; }

 private:
  std::string backend_;
  int code_;
  std::string host_;
  int rank_;
};

}  // namespace strata
