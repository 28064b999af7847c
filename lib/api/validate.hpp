// The validate stage: every public entry point checks its arguments here
// before anything is sent, so bad input never leaves a peer waiting.
// Each function throws InvalidArgument (or Unavailable for CUDA memory in a
// build or run without GPU support) with a message naming field and value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>
#include <string_view>

#include "strata/options.hpp"
#include "strata/types.hpp"
#include "topo/gpu_plane.hpp"

namespace strata::api {

void validate_options(const CommunicationOptions& options);

// options.implementation = nccl runs on CUDA tensors only: a call on host
// memory (`memory`, of the tensor `field` names) is refused whatever its
// count, so that the same arguments always meet the same answer.
void validate_implementation(const CommunicationOptions& options, Memory memory, std::string_view field);

// A communicator's Config: chunk_bytes 0 (default) or within
// [kMinChunkBytes, kMaxChunkBytes]. (The spec is checked when it is parsed.)
constexpr std::size_t kMinChunkBytes = 4096, kMaxChunkBytes = std::size_t{1} << 30;
void validate_config(const Config& config);
void validate_op(ReduceOp op);

// The end of every process's address space on the 64-bit platforms strata
// builds for: user memory, CUDA's unified addresses included, lies below
// 2^57 (x86-64 with 5-level paging ends at 2^56; arm64, POWER and RISC-V
// Sv57 lower still). A tensor ending beyond it cannot be a buffer: its
// count is wrong, and running it would fault inside an algorithm. Also the
// largest number of bytes a buffer (or a batch's pack) can hold.
constexpr std::size_t kMaxBufferBytes = sizeof(void*) == 8 ? std::size_t{1} << 57 : PTRDIFF_MAX;

// `field` names the argument ("in", "out", "tensors[3]"). `data_required`:
// whether a null pointer is an error when count > 0. Checks the dtype, the
// memory kind, that count x element size fits a buffer (<= kMaxBufferBytes)
// that ends inside the address space (data + bytes <= kMaxBufferBytes),
// and that data is element-aligned (host and CUDA alike). Whether a GPU is
// usable is the GPU backend's question.
void validate_tensor(const Tensor& tensor, std::string_view field, bool data_required = true);

// in and out of one call: same memory kind, count and dtype; either the
// same buffer or disjoint ones.
void validate_in_out(const Tensor& in, const Tensor& out);

void validate_root(int root, int size);

// reduce_scatter's input and output, all_gather's output and input: `whole`
// (named `whole_field`) holds `size` blocks of `block`'s count, in the same
// memory kind and dtype; `block` is either whole's block `rank` (in place)
// or disjoint from `whole`.
void validate_blocks(const Tensor& whole, std::string_view whole_field, const Tensor& block,
                     std::string_view block_field, int size, int rank);

// All tensors of a batch in the same kind of memory.
void validate_same_memory(std::span<const Tensor> tensors, std::string_view field);

// The per-dtype totals of a batch fit a buffer (<= kMaxBufferBytes): packs
// concatenate them. `field` names the list.
void validate_batch_size(std::span<const Tensor> tensors, std::string_view field);

// No two tensors of a batch share memory (results would depend on order).
// `field` names the list ("tensors").
void validate_disjoint(std::span<const Tensor> tensors, std::string_view field);

// CUDA tensors against the devices of this rank (`mine`, its row of the
// GPU control plane): a single tensor (`device`, -1 = the rank's own) must
// lie on the device this rank drives; every replica r of a batch's tensors
// on one device (`batch[k][r].device`, the same for every k) that this
// process sees. Checked before the call check, so a wrong device raises
// InvalidArgument here and Mismatch on the other ranks instead of leaving
// them waiting. Nothing to check where the rank drives no device (the
// control plane then refuses CUDA tensors on every rank).
void validate_device(int device, const topo::GpuRow& mine, std::string_view field);
void validate_replica_devices(const std::vector<std::vector<Tensor>>& batch, const topo::GpuRow& mine);

}  // namespace strata::api
