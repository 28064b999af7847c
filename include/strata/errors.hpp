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

// A call's timeout expired. The communicator refuses further calls
// afterwards. When it expires, strata asks every rank where it is (a roll
// call, docs/RELIABILITY.md):
//   waiting_for()      the ranks that did not arrive: they did not answer
//                      (stopped, crashed, or busy outside strata), and this
//                      rank was still waiting on them. Empty when nobody
//                      is known to be missing (every rank answered, or the
//                      backend cannot tell).
//   in_earlier_call()  the ranks that answered from an earlier call on this
//                      communicator: waiting there themselves, usually on
//                      the same missing ranks, so never counted as missing.
// Ranks in ascending order, in this communicator's numbering; the message
// names both.
class DeadlineExceeded : public Error {
 public:
  DeadlineExceeded(const std::string& what, std::vector<int> waiting_for, std::vector<int> in_earlier_call = {})
      : Error(what), waiting_for_(std::move(waiting_for)), in_earlier_call_(std::move(in_earlier_call)) {}
  const std::vector<int>& waiting_for() const { return waiting_for_; }
  const std::vector<int>& in_earlier_call() const { return in_earlier_call_; }

 private:
  std::vector<int> waiting_for_;
  std::vector<int> in_earlier_call_;
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

// A call's result failed the end-to-end integrity check (Config::verify,
// STRATA_VERIFY=checksum; docs/RELIABILITY.md, "Integrity checks"): the
// result the ranks hold is not the reduction (or copy) of what they gave —
// a bit flipped in transit, in shared memory or in a staging buffer, or a
// wrong reduction. Raised on every rank; the message names the call and
// which ranks' results differ or which sum disagreed. Every rank did the
// same communication, so the communicator stays usable; the outputs of
// the call are unreliable.
class Corrupted : public Error {
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
