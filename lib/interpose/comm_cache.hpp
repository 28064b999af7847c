// One strata::Communicator per MPI communicator, created on the first call
// routed to strata and cached as an MPI attribute on that communicator.
//
// Lifetime: the attribute's delete callback destroys the Communicator when
// the program frees the MPI communicator (MPI_Comm_free, MPI_Comm_disconnect)
// and its copy callback is MPI_COMM_NULL_COPY_FN, so a duplicate gets its
// own on first use. At MPI_Finalize, MPI deletes MPI_COMM_SELF's attributes
// before anything else; a hook attribute there destroys every Communicator
// still alive (MPI_COMM_WORLD's, and those of communicators never freed)
// while MPI still works, because strata's destructor calls MPI_Comm_free.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "strata/communicator.hpp"

namespace strata::interpose {

// Where this rank sits in a communicator: MPI's rank and size, which
// strata's Communicator on it keeps.
struct Seat {
  int rank = 0;
  int size = 0;
};

// This rank's Seat in `comm`, asked of MPI (what an entry keeps; a routed
// call whose communicator has no entry yet asks here). Never throws.
Seat seat_in(MPI_Comm comm) noexcept;

struct CommEntry {
  std::unique_ptr<Communicator> strata;  // null once destroyed, or if it could not be created
  std::string unavailable;               // why strata could not start here ("" = it did)
  std::string label;                     // comm_label, made when the entry was
  Seat seat;                             // this rank's, asked of MPI when the entry was made
};

// The entry cached on `comm`, or nullptr. Local (no communication); never
// throws.
CommEntry* find_entry(MPI_Comm comm) noexcept;

// find_entry, remembering the last communicator that had an entry so that a
// program calling on the same communicator again skips MPI's attribute
// lookup. For the routing path only, which never runs concurrently (see
// settings.hpp: nothing is routed under MPI_THREAD_MULTIPLE). Never throws.
CommEntry* find_entry_fast(MPI_Comm comm) noexcept;

// A number that changes whenever an entry is deleted or its Communicator
// destroyed: what remembers an entry (repeat.hpp) compares it. For the
// routing path only, like find_entry_fast. Never throws.
std::uint64_t entry_generation() noexcept;

// The entry cached on `comm`, creating it on first use. Collective over
// `comm`: every rank must be inside the same collective call, which holds
// because the caller routes a call to strata on every rank or on none
// (a blocking call, or the first run of the first routed request, which
// every rank runs in the order it started its requests: started.hpp).
// Construction failures do not escape: the ranks agree (one PMPI_Allreduce)
// whether every rank constructed its Communicator; if not, all of them drop
// theirs, the entry records why in `unavailable` (reported once at WARN) and
// calls on this communicator keep going to MPI. Throws std::bad_alloc when
// MPI cannot store the attribute (out of memory).
CommEntry& entry_for(MPI_Comm comm);

// How log lines name a communicator: its name when it has one
// ("MPI_COMM_WORLD", "MPI_COMM_SELF", or one the program set), else the
// MPI_COMM_WORLD ranks it holds ("world ranks 0,2-3"; a long list is cut to
// its ends and a hash of it), then its size: "world ranks 0,2-3 (3 ranks)".
// Every member says the same, without communicating (MPI translates the
// group), and a communicator the program makes again over the same ranks
// gets the same label, so that INFO does not print its decisions again.
// The entry's label when `comm` has one. Local; never throws.
std::string comm_label(MPI_Comm comm) noexcept;

}  // namespace strata::interpose
