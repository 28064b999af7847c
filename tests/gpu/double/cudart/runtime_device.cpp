// Runtime entry points: devices, errors and occupancy.
#include <fmt/format.h>

#include <cstring>

#include "call.hpp"
#include "capture.hpp"
#include "faults.hpp"
#include "kernels.hpp"
#include "settings.hpp"

using namespace gpu_double;

namespace {

constexpr int kMultiprocessors = 132;  // an H100 SXM's count: grids come out the size a real one would get

cudaError_t check_device(Call& call, int device) {
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  if (!valid_device(device))
    return call.misuse(cudaErrorInvalidDevice,
                       fmt::format("device {} does not exist ({} device(s): STRATA_FAKE_GPUS)", device, device_count()));
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  Call call("cudaGetDeviceCount");
  *count = device_count();
  return *count == 0 ? call.error(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  Call call("cudaSetDevice");
  if (const cudaError_t e = check_device(call, device)) return e;
  if (fault_now(Fault::set_device) || (in_nccl_group() && fault_now(Fault::grouped_set_device)))
    return call.error(cudaErrorDevicesUnavailable);
  set_current_device(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  Call call("cudaGetDevice");
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  *device = current_device();
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* text, int length, int device) {
  Call call("cudaDeviceGetPCIBusId");
  if (const cudaError_t e = check_device(call, device)) return e;
  const std::string& id = bus_id(device);
  if (length < int(id.size()) + 1)
    return call.misuse(cudaErrorInvalidValue, fmt::format("a buffer of {} bytes for a {}-byte bus id", length, id.size() + 1));
  std::memcpy(text, id.c_str(), id.size() + 1);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  Call call("cudaDeviceGetAttribute");
  if (const cudaError_t e = check_device(call, device)) return e;
  switch (attribute) {
    case cudaDevAttrComputeMode: *value = compute_mode(device); return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = kMultiprocessors; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
    default:
      return call.misuse(cudaErrorInvalidValue,
                         fmt::format("attribute {} is not simulated by the test double", int(attribute)));
  }
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  Call call("cudaGetDeviceProperties");
  if (const cudaError_t e = check_device(call, device)) return e;
  std::memset(prop, 0, sizeof *prop);
  // Programs that print figures read the name: it says the device is simulated.
  std::snprintf(prop->name, sizeof prop->name, "strata test double (simulated GPU %d)", device);
  prop->totalGlobalMem = settings().memory_bytes;
  prop->multiProcessorCount = kMultiprocessors;
  prop->major = 9;
  prop->minor = 0;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  std::sscanf(bus_id(device).c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function);
  prop->pciDomainID = int(domain);
  prop->pciBusID = int(bus);
  prop->pciDeviceID = int(slot);
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  Call call("cudaDeviceCanAccessPeer");
  if (const cudaError_t e = check_device(call, device)) return e;
  if (const cudaError_t e = check_device(call, peer)) return e;
  *can = device != peer;  // the simulated GPUs of one process are all peers
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  Call call("cudaDeviceEnablePeerAccess");
  const int device = current_device();
  if (const cudaError_t e = check_device(call, peer)) return e;
  if (flags != 0) return call.misuse(cudaErrorInvalidValue, fmt::format("flags = {} (must be 0)", flags));
  if (peer == device)
    return call.misuse(cudaErrorInvalidDevice, fmt::format("device {} asked for peer access to itself", device));
  return enable_peer(device, peer) ? cudaSuccess : call.error(cudaErrorPeerAccessAlreadyEnabled);
}

cudaError_t cudaDeviceSynchronize() {
  Call call("cudaDeviceSynchronize");
  const int device = current_device();
  if (const cudaError_t e = check_device(call, device)) return e;
  if (const cudaError_t e = check_device_wait(call.name(), device)) return e;
  const auto streams = all_streams();
  for (Stream* s : streams)
    if (s->device() == device && !call.stream_usable(s)) return cudaErrorIllegalState;
  wait_until(
      [&] {
        for (Stream* s : streams)
          if (s->device() == device && !s->idle()) return false;
        return true;
      },
      "cudaDeviceSynchronize",
      [&] {
        std::string busy;
        for (Stream* s : streams)
          if (s->device() == device && !s->idle()) busy += fmt::format("{} (at: {}); ", s->name(), s->next_label());
        return "device " + std::to_string(device) + " to finish its work: " + busy;
      });
  cudaError_t sticky = cudaSuccess;
  return call.failed(&sticky) ? call.error(sticky) : cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function, int block_size,
                                                          size_t shared_memory) {
  Call call("cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!kernel_of(function))
    return call.misuse(cudaErrorInvalidDeviceFunction, "the function is not a registered kernel");
  if (block_size <= 0 || block_size > 1024 || shared_memory > 48 * 1024)
    return call.misuse(cudaErrorInvalidValue, fmt::format("block size {} with {} bytes of shared memory", block_size,
                                                          shared_memory));
  *blocks = 2048 / block_size;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() { return take_last_error(); }
cudaError_t cudaPeekAtLastError() { return peek_last_error(); }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define NAME(e) \
  case e: return #e;
    NAME(cudaSuccess)
    NAME(cudaErrorInvalidValue)
    NAME(cudaErrorMemoryAllocation)
    NAME(cudaErrorInvalidConfiguration)
    NAME(cudaErrorInvalidDeviceFunction)
    NAME(cudaErrorNoDevice)
    NAME(cudaErrorInvalidDevice)
    NAME(cudaErrorDevicesUnavailable)
    NAME(cudaErrorInvalidResourceHandle)
    NAME(cudaErrorIllegalState)
    NAME(cudaErrorNotReady)
    NAME(cudaErrorIllegalAddress)
    NAME(cudaErrorMisalignedAddress)
    NAME(cudaErrorLaunchFailure)
    NAME(cudaErrorNotPermitted)
    NAME(cudaErrorNotSupported)
    NAME(cudaErrorPeerAccessAlreadyEnabled)
    NAME(cudaErrorStreamCaptureUnsupported)
    NAME(cudaErrorStreamCaptureInvalidated)
    NAME(cudaErrorStreamCaptureMerge)
    NAME(cudaErrorStreamCaptureUnmatched)
    NAME(cudaErrorStreamCaptureUnjoined)
    NAME(cudaErrorStreamCaptureIsolation)
    NAME(cudaErrorStreamCaptureImplicit)
    NAME(cudaErrorCapturedEvent)
    NAME(cudaErrorStreamCaptureWrongThread)
#undef NAME
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorDevicesUnavailable: return "CUDA-capable device(s) is/are busy or unavailable";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotPermitted: return "operation not permitted";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
    case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation:
      return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread:
      return "attempt to terminate a thread-local capture sequence from another thread";
    default: return "unknown error";
  }
}

}  // extern "C"
