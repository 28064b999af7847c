// The little CUDA runtime the module itself needs for CUDA arrays: which
// device owns a pointer, and waiting for the stream the array's producer
// queued its work on (strata's own streams do not wait for it). In builds
// without the GPU backend (STRATA_PY_CUDA=0) these do nothing, and strata
// raises Unavailable for the CUDA arrays themselves.
#pragma once

#include <cstdint>

namespace strata_py::cuda {

// Number of CUDA devices this process sees; 0 when none, when the driver is
// missing, or in a host-only build. Never throws.
int device_count();

// The CUDA device that owns device (or managed) memory at `ptr`; -1 when it
// cannot tell (host-only build, no driver, not CUDA memory), which strata
// reads as "this rank's device". Never throws.
int device_of(const void* ptr);

// Blocks until the work queued so far on `stream` is done. `stream` is a
// stream handle as Python passes it: 1 = legacy default stream, 2 =
// per-thread default stream, anything else a cudaStream_t; `device` (-1 =
// current) is the device whose default stream is meant. Does nothing in a
// host-only build or where no device is usable: the collective then raises
// Unavailable on every rank, as strata promises. Throws
// strata::BackendError (backend "CUDA") if the synchronisation itself fails.
// Call it without the GIL.
void synchronize(std::uintptr_t stream, int device);

}  // namespace strata_py::cuda
