// Packing: how batch_all_reduce turns a list of tensors into packs, each one
// collective call. A packing is a plain value (testable without MPI): each
// pack lists the pieces of caller tensors it carries, in order.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata::plan {

struct TensorShape {
  std::size_t count = 0;
  DataType dtype = DataType::f32;
};

struct PackPiece {
  std::size_t tensor = 0;  // index into the caller's list
  std::size_t offset = 0;  // first element of that tensor in this pack
  std::size_t count = 0;
};

struct Pack {
  DataType dtype = DataType::f32;
  std::vector<PackPiece> pieces;  // in input order
  std::size_t count = 0;          // total elements
  std::size_t bytes() const { return count * dtype_size(dtype); }
};

// The packs for `tensors`. `bytes_per_pack` is the effective byte target for
// the bytes_per_pack rule (already resolved from "automatic"). Zero-element
// tensors join no pack. Packs are ordered by their first tensor's position,
// so on_pack_done fires in input order as far as dtypes allow.
// Precondition: options validated (see validate_packing).
std::vector<Pack> make_packs(std::span<const TensorShape> tensors, const PackingOptions& options,
                             std::size_t bytes_per_pack);

// The automatic bytes_per_pack on a job of `node_count` nodes. Packing
// saves one call's fixed cost per tensor but costs a copy in and out of the
// staging buffer, so it pays only for tensors that are small next to
// latency x bandwidth: 64 KiB on one node (shared memory: ~0.3 us per call),
// 1 MiB across nodes (tens of us per call). Larger tensors go alone, reduced
// where they lie. Measurements behind the values: docs/ALGORITHMS.md.
std::size_t automatic_bytes_per_pack(int node_count);

// Throws InvalidArgument naming the field for negative values.
void validate_packing(const PackingOptions& options);

// "3 packs: [f32 2 tensors 1.0 MiB] ..." for STRATA_DEBUG=TRACE.
std::string describe(std::span<const Pack> packs);

}  // namespace strata::plan
