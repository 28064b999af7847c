// The rank helpers every MPI test program shares (part of the harness core,
// harness_core.hpp): who this rank is, what every rank agrees on, and a
// hash to compare output bits across ranks. MPI and the C++ standard
// library only.
#pragma once

#include "harness_mpi.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::test {

// This process's rank in MPI_COMM_WORLD, and the world's size.
int world_rank();
int world_size();

// FNV-1a over the bytes: cheap, and any difference in output bits shows.
std::uint64_t hash_bytes(const void* data, std::size_t bytes);

// True on every rank iff `local` is true on every rank of `comm`.
bool all_ranks(MPI_Comm comm, bool local);

// The ranks of `comm` where `local` is true (same answer on every rank).
std::vector<int> ranks_where(MPI_Comm comm, bool local);

// True on every rank iff every rank of `comm` passed rank 0's `hash`.
bool same_on_all_ranks(MPI_Comm comm, std::uint64_t hash);

// "0,2,3" (empty: "").
std::string rank_list(const std::vector<int>& ranks);

// Waits until every other rank of MPI_COMM_WORLD has sent this one an int
// with `tag` (a word: "my call raised"), up to `bound_seconds`; whether all
// did. Polls, so the caller's strata work (a roll call) is not blocked by
// a blocking receive.
bool heard_from_every_other_rank(int tag, double bound_seconds);

}  // namespace strata::test
