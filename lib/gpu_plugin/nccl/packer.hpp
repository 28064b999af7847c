// Packing a CUDA batch's pack: every replica's pieces into one buffer on
// its device with strata's pack kernel (a descriptor per piece, copied to
// the device from pinned memory, so the copy is asynchronous and the
// descriptors outlive it), and back out with the unpack kernel. The
// descriptors of the last pack stay for its unpack. Ordered calls return
// before their uploads ran, so the pinned tables are a ring of kTables per
// replica, each reused only once the fence after its upload passed (a host
// wait only when kTables packs are still queued). A captured pack's tables
// are memory of its own (the graph uploads them again at every replay).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/cuda/stream.hpp"
#include "gpu/batch_pack.hpp"
#include "gpu_plugin/nccl/engine.hpp"

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
  static constexpr std::size_t kTables = 16;
  struct Table {
    cuda::PinnedBuffer pinned;  // a replica's descriptors on the host
    gpu::Fence uploaded;        // after the upload that last read it
  };
  // The pinned table for replica r's next upload, free to write (Table
  // ring slot `next_`, made on first use).
  void* table_for(Engine& engine, std::size_t r, std::size_t bytes);

  std::vector<std::vector<std::unique_ptr<Table>>> tables_;  // [replica][ring slot]
  std::size_t next_ = 0;                                      // the ring slot of the next pack
};

}  // namespace strata::nccl
