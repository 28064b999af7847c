// The fake devices of this process (Settings::devices of them): PCI bus ids
// and compute modes, each device's legacy default stream, the thread's
// current device and per-thread default streams, sticky errors, and the
// thread's last error.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "stream.hpp"

namespace gpu_double {

int device_count();
bool valid_device(int device);
// "0000:07:00.0"-style bus id of `device` (the ids of an 8-GPU server, so
// identical processes see identical ids, as identical nodes do).
const std::string& bus_id(int device);
int compute_mode(int device);

// The calling thread's current device (CUDA keeps it per host thread; 0
// until cudaSetDevice).
int current_device();
void set_current_device(int device);

Stream& legacy_stream(int device);
Stream& per_thread_stream(int device);

// The stream a handle names: 0 and cudaStreamLegacy the current device's
// legacy default stream, cudaStreamPerThread the thread's own, else a
// stream made by cudaStreamCreate*. Null, after a violation in `call`, for a
// handle that is no stream or one already destroyed.
Stream* stream_of(const char* call, cudaStream_t handle);
cudaStream_t handle_of(Stream* stream);

// Peer access (cudaDeviceEnablePeerAccess): whether `device` may reach
// `peer`'s memory directly. Recorded only: copies between devices work
// either way, and strata's kernels never touch another device's memory.
bool enable_peer(int device, int peer);  // false when it was enabled already

// Sticky errors: once an operation failed on the device, every later call
// returns this error (as a real CUDA context does after an illegal address).
void fail_device(int device, cudaError_t error);
cudaError_t sticky_error(int device);

// cudaGetLastError / cudaPeekAtLastError state of the calling thread.
void set_last_error(cudaError_t error);
cudaError_t take_last_error();
cudaError_t peek_last_error();

}  // namespace gpu_double
