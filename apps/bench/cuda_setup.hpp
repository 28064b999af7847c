// --memory cuda's decisions that every rank must agree on before anything
// runs: whether the run can happen at all (a device on every rank), which
// device each rank uses, whether NCCL can run on that placement, and
// whether the devices are simulated. Each
// decision is collective, so a rank never waits in a collective that
// another rank skipped. Compiled in every build (no CUDA types here).
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "strata/topology.hpp"

namespace bench {

// Collective over `comm`. Every rank counts its CUDA devices
// (cuda::device_count). If some rank has none, every rank returns the same
// one-line reason, naming how many ranks lack a device and quoting the
// lowest such rank's host and CUDA error (or just "this strata-bench was
// built without CUDA (...)"); otherwise nullopt, with this rank's device
// count in `*device_count`.
std::optional<std::string> agree_no_device(MPI_Comm comm, int* device_count);

// The CUDA device this rank benchmarks on. The library's assignment
// (RankInfo::gpu.cuda_device) wins whenever it made one (>= 0), so that the
// bench's buffers sit on the device strata drives; without one (-1) the
// bench falls back to local rank % device_count, the library's own
// round-robin rule. Local; never throws.
int choose_device(const strata::Topology& topology, int rank, int device_count);

// Collective over `comm`: every rank's device index, indexed by rank.
std::vector<int> gather_devices(MPI_Comm comm, int device);

// Collective over `comm`. Where two ranks on one host drive the same GPU
// (same PCI bus id; the host is NCCL_HOSTID when set, as NCCL keys it), a
// one-line reason why NCCL cannot run there (an NCCL communicator takes one
// rank per GPU); nullopt when every rank has a GPU of its own. Every rank returns the same answer. Throws
// std::runtime_error when CUDA cannot name the device's PCI bus id.
std::optional<std::string> shared_gpu(MPI_Comm comm, int device);

// Collective over `comm`. Whether the run is on a simulated device: some
// rank's `device` has "simulated" in its cudaGetDeviceProperties name (the
// test double's do: "strata test double (simulated GPU 0)"). Then the lowest
// such rank's device name, the same on every rank, and the bench claims no
// bandwidth (RunInfo::simulated_device); nullopt on real GPUs. Throws
// std::runtime_error when CUDA cannot name the device.
std::optional<std::string> simulated_device(MPI_Comm comm, int device);

}  // namespace bench
