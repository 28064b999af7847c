// Faults on demand, so that strata's failure paths (setup agreement,
// timeouts, blame, broken communicators) run on CUDA tensors too.
// STRATA_FAKE_FAULTS is a comma-separated list of kind@rank[#nth][:seconds]:
//   rank     the launcher's rank it applies to (Settings::world_rank), or * for all
//   nth      which call of that kind in that process fails (1-based, default
//            1), or * for every one
//   seconds  for nccl-stall: how long the call is held (default 30)
// Kinds:
//   malloc      cudaMalloc fails with cudaErrorMemoryAllocation
//   host-alloc  cudaHostAlloc / cudaMallocHost fails likewise
//   set-device  cudaSetDevice fails with cudaErrorDevicesUnavailable
//   grouped-set-device
//               the same, counting only calls made while the thread has an NCCL
//               group open (a CUDA failure between ncclGroupStart and ncclGroupEnd)
//   nccl-init   ncclCommInitRank(Config) ends in an asynchronous ncclSystemError
//   nccl-stall  an NCCL operation call (collective, send, recv) holds the calling
//               thread for `seconds` before it returns: a rank stuck inside NCCL
//   nccl-hang   an NCCL operation never completes on its stream, until its
//               communicator is aborted: a device-side hang
//   nccl-error  an NCCL operation ends with an asynchronous ncclSystemError and
//               writes nothing (ncclCommGetAsyncError reports it)
//   nccl-finalize
//               ncclCommFinalize never completes (as with a peer that died): the
//               communicator stays in progress until it is aborted
// A test may also arm faults while it runs, so that they hit the call it
// means (counts start again from there): strata_double_set_faults(spec),
// looked up with dlsym (absent from a real CUDA runtime), replaces the list.
#pragma once

namespace gpu_double {

enum class Fault {
  malloc,
  host_alloc,
  set_device,
  grouped_set_device,
  nccl_init,
  nccl_stall,
  nccl_hang,
  nccl_error,
  nccl_finalize
};

// Counts one call of `kind` in this process; true when this is the call a
// fault names. `seconds` receives the fault's duration (nccl-stall).
bool fault_now(Fault kind, double* seconds = nullptr);

// The NCCL double tells the runtime how deep the calling thread's NCCL
// group is (grouped-set-device counts only calls inside one).
void set_group_probe(int (*depth)());
bool in_nccl_group();

}  // namespace gpu_double
