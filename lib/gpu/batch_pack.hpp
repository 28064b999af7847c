// A pack of a CUDA batch as the GPU backend's batch primitives take it
// (Backend::pack .. unpack): the pieces every local replica contributes,
// and the staged buffers they are packed into.
#pragma once

#include <cstddef>
#include <vector>

#include "strata/types.hpp"

namespace strata::gpu {

// Replica r's pack is the concatenation of its pieces (caller tensors, or
// ranges of them, in device memory on `device`). Replicas
// (num_gpus_per_worker > 1) may lie on any device the process sees; the
// first usually lies on the backend's device (the rank's assigned GPU),
// but a TensorFlow-style list starting at device 0 need not.
struct GpuPiece {
  void* data = nullptr;
  std::size_t count = 0;  // elements of the pack's dtype
};
struct GpuReplicaPack {
  int device = -1;  // -1 = the backend's device
  std::vector<GpuPiece> pieces;
};
struct GpuPack {
  DataType dtype = DataType::f32;
  std::vector<GpuReplicaPack> replicas;  // one per local replica, the same count on every rank
  bool lands_here = true;                // whether this rank's replicas receive the result
};

// A pack staged in device memory: replica r's buffer on devices[r], and
// the home the plan across ranks runs on, on the backend's device: replica
// 0's buffer itself when replica 0 lies there, else a buffer of its own that
// combine fills from every replica and spread copies back to them.
struct Packed {
  std::vector<void*> data;
  std::vector<int> devices;
  void* home = nullptr;
  DataType dtype = DataType::f32;
  std::size_t count = 0;  // elements in each buffer (pieces at 16-byte offsets, padding included)
  bool in_place = false;  // data[0] (the home) is the caller's only piece: nothing to unpack
};

}  // namespace strata::gpu
