// strata.Communicator: one strata::Communicator owned by Python, with a lock
// so that close() can never free it under a call running in another thread
// (collectives run with the GIL released).
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>

#include "strata/communicator.hpp"
#include "strata/errors.hpp"

namespace strata_py {

namespace py = pybind11;

class PyCommunicator {
 public:
  // Collective over `comm` (see strata::Communicator). Call without the GIL.
  PyCommunicator(MPI_Comm comm, strata::Config config);

  // Runs f(communicator) under the call lock. Throws strata::InvalidArgument
  // once closed. Call without the GIL: the lock may be held by a collective
  // running in another thread, and f itself may block in one.
  template <class F>
  decltype(auto) call(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!comm_) throw strata::InvalidArgument("this strata.Communicator is closed");
    return f(*comm_);
  }

  // Runs f() under the call lock, open or closed: a strata::Request made
  // here (strata.Request) is used under it, and outlives close(), which
  // completes it. Call without the GIL.
  template <class F>
  decltype(auto) locked(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    return f();
  }

  // Frees the strata::Communicator (and its MPI communicator) now rather
  // than at garbage collection; idempotent. Local, not collective. Call
  // without the GIL (it waits for a running call).
  void close();

  bool closed() const;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<strata::Communicator> comm_;
  int rank_ = 0;
  int size_ = 0;
};

// The MPI communicator inside an mpi4py.MPI.Comm. Throws py::type_error for
// anything else and strata::InvalidArgument for MPI.COMM_NULL.
MPI_Comm mpi_comm_of(py::handle comm);

// `comm` as a shared strata.Communicator: a strata.Communicator as it is,
// an mpi4py communicator wrapped in a new one (collective, default Config).
std::shared_ptr<PyCommunicator> communicator_of(py::handle comm);

void bind_communicator(py::module_& m);

}  // namespace strata_py
