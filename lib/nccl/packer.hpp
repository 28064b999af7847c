// Packing a CUDA batch's pack: every replica's pieces into one buffer on
// its device with strata's pack kernel (a descriptor per piece, copied to
// the device from pinned memory, so the copy is asynchronous and the
// descriptors outlive it), and back out with the unpack kernel. The
// descriptors of the last pack stay for its unpack. Each pack's call
// completes (Backend::complete) before the next pack writes them again.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda/kernels.hpp"
#include "cuda/stream.hpp"
#include "gpu/batch_pack.hpp"
#include "nccl/engine.hpp"

namespace strata::nccl {

class Packer {
 public:
  // Every replica's pieces into its pack buffer (replica 0 on the engine's
  // device: the engine's device scratch slot 2, which is then the home;
  // others: their replica slot's, and the home is scratch slot 2), one
  // kernel per replica on its own stream; or the caller's memory itself when
  // the pack is one piece of one replica on the engine's device that lands
  // here. `devices` are the open call's replica devices.
  gpu::Packed pack(Engine& engine, const gpu::GpuPack& pack, std::span<const int> devices);
  // Every replica's buffer back into its pieces (nothing when in place).
  void unpack(Engine& engine, const gpu::Packed& packed);
  // Leaks the descriptors (device and pinned): for an engine whose work was
  // abandoned (Engine::shut_down() false), which may still read them.
  void abandon();

 private:
  // A replica's pack descriptors in device memory.
  struct Descriptors {
    cuda::PackDesc* device = nullptr;
    std::size_t count = 0;
    std::size_t largest = 0;  // bytes of the largest piece (sizes the pack kernel's grid)
  };

  cuda::DeviceBuffer descs0_;  // replica 0's descriptors (the others' live in their replica slot)
  std::vector<Descriptors> descs_;
  std::vector<std::unique_ptr<cuda::PinnedBuffer>> staged_;  // each replica's descriptors on the host, pinned
};

}  // namespace strata::nccl
