// The GPU backend as libstrata reaches it: the plugin libstrata_gpu.so
// (CUDA + NCCL), loaded with dlopen the first time one of these functions
// runs, once per process (thread-safe). It is looked for next to
// libstrata.so itself first (so that an install stays relocatable), then by
// its soname through the dynamic loader's search path. Where it cannot be
// loaded (a host-only build has none; the file is missing; the CUDA runtime
// or NCCL it needs is missing; another strata version) these report why,
// CUDA tensors raise Unavailable with that reason, and host calls are
// unaffected: libstrata itself needs no CUDA library.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "topo/discover.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::gpu {

// Whether this strata was built with the GPU backend (STRATA_HAVE_CUDA):
// known at compile time, whether or not the plugin loads here.
bool built();

// Whether a CUDA device is usable now (plugin loaded, driver loaded,
// cudaGetDeviceCount > 0). Never throws; on false, `why` (if non-null) gets
// a one-line reason.
bool device_available(std::string* why = nullptr);

// What this process sees of CUDA: every device's PCI bus id and compute
// mode, or why it sees none. Never throws (every Communicator's topology
// discovery calls it).
topo::CudaProbe probe_devices();

// What work enqueued on a stream would be now.
enum class Capture {
  none,         // run
  active,       // recorded into the CUDA graph the stream is capturing
  invalidated,  // the stream's capture was already broken by a call capture forbids
  implicit,     // the legacy default stream while a blocking stream of its device captures: any work there
                // would break that capture
};

// The capture status of `stream` (a cudaStream_t; null: the legacy default
// stream of the calling thread's current device). `none` where the plugin
// is not loaded. Never throws.
Capture capture_status(void* stream);

// Makes the calling thread's queries and allocations legal while another
// thread captures a CUDA graph in CUDA's default (global) mode: its capture
// interaction mode becomes relaxed, for good. For strata's own threads (the
// GPU watcher, the progress thread), never the application's. Nothing where
// the plugin is not loaded. Never throws.
void relax_capture_checks();

// The backend of one rank over `comm`, driving CUDA device `device` (the
// rank's row in `rows`, the GPU control plane's table). `comm` and `split`
// must outlive it. Local: no communication (NCCL communicators are made
// with the levels). Throws Unavailable when the plugin cannot be loaded or
// the device cannot be used, BackendError when CUDA fails.
std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                      std::vector<topo::GpuRow> rows);

}  // namespace strata::gpu
