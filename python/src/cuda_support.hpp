// The little CUDA runtime the module itself needs for CUDA arrays: which
// device owns a pointer, and ordering after the stream the array's producer
// queued its work on (strata orders after the call's stream, or the legacy
// default stream, not after the producer's): on the host for a blocking
// call, on the GPU for a stream-ordered one. The
// extension links no libcudart: the first CUDA array (or device_count())
// dlopens libcudart.so.<CUDA major> and resolves these few calls, so that
// `import strata` and host arrays work where the CUDA runtime is missing.
// Where it cannot be loaded, or in builds without the GPU backend
// (STRATA_PY_CUDA=0), these do nothing, and strata raises Unavailable for
// the CUDA arrays themselves, on every rank.
#pragma once

#include <cstdint>
#include <string>

namespace strata_py::cuda {

// "" while the CUDA runtime loaded or was never needed (host arrays only),
// and in builds without the GPU backend; else one line naming the library
// and the loader's reason ("cannot load libcudart.so.13: libcudart.so.13:
// cannot open shared object file: No such file or directory"), which the
// module adds to strata.Unavailable's message (errors.cpp). Loads nothing;
// never throws.
std::string runtime_problem();

// Number of CUDA devices this process sees; 0 when none, when the driver or
// the CUDA runtime is missing, or in a host-only build. Loads the runtime on
// first call. Never throws.
int device_count();

// The CUDA device that owns device (or managed) memory at `ptr`; -1 when it
// cannot tell (host-only build, no driver or runtime, not CUDA memory),
// which strata reads as "this rank's device". Never throws.
int device_of(const void* ptr);

// Blocks until the work queued so far on `stream` is done. `stream` is a
// stream handle as Python passes it: 1 = legacy default stream, 2 =
// per-thread default stream, anything else a cudaStream_t; `device` (-1 =
// current) is the device whose default stream is meant. Does nothing in a
// host-only build, without the CUDA runtime, or where no device is usable:
// the collective then raises Unavailable on every rank, as strata promises
// (raising here, on this rank alone, would leave the others waiting). Throws
// strata::BackendError (backend "CUDA") if the synchronisation itself fails.
// Call it without the GIL.
void synchronize(std::uintptr_t stream, int device);

// Makes `waiter` wait, on the GPU, for the work queued so far on
// `producer` (an event recorded on `producer`, waited on by `waiter`);
// returns at once, never waiting for the GPU. Handles as for synchronize();
// `device` (-1 = current) is current while the event is recorded, so that
// a default-stream handle means that device's. Does nothing where
// synchronize() does nothing, or when the two handles are equal. Throws
// strata::BackendError (backend "CUDA") if CUDA refuses (a capturing
// `waiter` with a `producer` outside the capture, for one). Call it
// without the GIL.
void stream_wait(std::uintptr_t waiter, std::uintptr_t producer, int device);

}  // namespace strata_py::cuda
