// NCCL's rule for threads: issuing operations to communicators of one GPU
// from several threads at once is unsafe (their kernels may be enqueued in
// different orders on different ranks and wait for each other). Two strata
// Communicators used from two threads each issue through NCCL, so every
// issue (a group of operations, from ncclGroupStart to ncclGroupEnd) holds
// its device's lock, process-wide. Only the issue: waiting for an enqueue
// to settle (ncclInProgress) happens after the lock is released, since it
// may wait for peers that are themselves held behind another issue.
#pragma once

#include <mutex>
#include <span>
#include <vector>

namespace strata::nccl {

// Holds the lock of `device` for the lifetime of the returned lock.
std::unique_lock<std::mutex> lock_device(int device);

// The locks of every device in `devices` (duplicates allowed), taken in
// ascending device order so that two threads never wait for each other.
std::vector<std::unique_lock<std::mutex>> lock_devices(std::span<const int> devices);

}  // namespace strata::nccl
