// Fault injection, a testing aid: flips one bit of data in flight at a
// chosen site, so tests can show that the integrity check
// (Config::verify, exec/integrity.hpp) catches it. Armed by the
// environment, read once when libstrata is loaded:
//   STRATA_FAULT_FLIP=<site>:<call>:<rank>[:<bit>]
//     site  shm  a block a rank staged in its shared-memory set, before peers read it
//           mpi  a buffer an MPI receive of host::Transport filled, before the algorithm uses it
//     call  the call's number on its communicator (from 1; a batch's packs share one)
//     rank  the MPI_COMM_WORLD rank that flips
//     bit   which bit, counted from the buffer's first byte, little-endian (default 30: an
//           f32's highest exponent bit)
// The first time the named rank's call of that number passes the site, the
// bit flips; then the hook is disarmed. Unset (the normal case), each site
// costs one predictable branch. Not for production use. Internal header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::util::fault {

enum class Site { shm, mpi };

namespace detail {
extern bool armed_flag;  // set at load time from STRATA_FAULT_FLIP, or by arm()
void flip_if_chosen(Site site, std::uint64_t call, void* data, std::size_t bytes);
}  // namespace detail

// Whether a flip is pending (the one branch each site pays).
inline bool armed() { return detail::armed_flag; }

// At `site`, in call number `call`: flips the chosen bit of `data` (`bytes`
// long) if this is the armed site, call and rank and the bit lies inside.
inline void at(Site site, std::uint64_t call, void* data, std::size_t bytes) {
  if (armed()) [[unlikely]]
    detail::flip_if_chosen(site, call, data, bytes);
}

// For tests in one process: arms a flip as STRATA_FAULT_FLIP would (rank
// is the MPI_COMM_WORLD rank), replacing any pending one.
void arm(Site site, std::uint64_t call, int world_rank, std::size_t bit);
// Disarms a pending flip (a test whose call never reached the site).
void disarm();
// How many flips this process made so far.
std::uint64_t flips();

}  // namespace strata::util::fault
