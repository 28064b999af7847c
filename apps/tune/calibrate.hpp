// --calibrate: the cost model's parameters from short runs on this layout
// (docs/SCALING.md, "Calibration"). While two ranks measure, the others
// wait without spinning (so that oversubscribed layouts still measure one
// pair alone on its cores):
//   gamma: rank 0 sums two 8 MiB f32 arrays (beyond the caches), median of 5;
//   intra: MPI ping-pong between local ranks 0 and 1 of the first node with
//     two ranks: alpha = one-way time at 8 B, beta = median over 1, 4 and
//     16 MiB of (one-way time - alpha) / bytes;
//   inter: the same between the first ranks of nodes 0 and 1 (one node:
//     copied from intra, and the comments say it was not measured);
//   shm: pscpu on the first node with two ranks alone (its own
//     communicator): alpha from 8 B, beta from 8 MiB, each solved from the
//     model's pscpu formula with the other parameters known.
#pragma once

#include <mpi.h>

#include <string>

#include "model.hpp"

namespace tune {

struct Calibration {
  Machine machine;
  std::string notes;  // how each figure was measured, with the raw times (for the file's comments)
};

// Collective over comm. Throws strata::Error (or BackendError from MPI) on failure.
Calibration calibrate(MPI_Comm comm);

}  // namespace tune
