// --calibrate: the cost model's parameters from short runs on this layout
// (docs/SCALING.md, "Calibration"). While some ranks measure, the others
// wait without spinning, so that oversubscribed layouts still measure the
// measuring ranks alone on their cores. Each parameter is solved from the
// model's own formula for the run that measured it (the formula is linear
// in it), so calibration and prediction cannot disagree about what a
// parameter means:
//   cache_bytes: the regimes' boundary: the per-core L2 cache (sysconf)
//     first (the betas are fitted at half of it and at 32 MiB), then
//     xring at 2-16 MiB on the same pair, each size classed with the
//     regime that predicts it better; the largest cached one;
//   gamma, gamma_memory: rank 0 sums two f32 arrays of cache_bytes/4 and of
//     32 MiB;
//   intra: tree at 8 B (alpha), xring at cache_bytes/2 (beta) and 32 MiB
//     (beta_memory) on local ranks 0 and 1 of the first node with two
//     ranks, alone;
//   inter: the same on the first ranks of nodes 0 and 1 (one node: copied
//     from intra, and the notes say it was not measured);
//   shm: pscpu at the same three sizes on that node's ranks alone;
//   shm_direct_scale: pscpu at 256 KiB there, divided by the formula's
//     time (the replicated path, which the other sizes do not run).
#pragma once

#include <mpi.h>

#include <string>

#include "strata/cost_model.hpp"

namespace tune {

namespace model = strata::model;  // the cost model (strata/cost_model.hpp)

struct Calibration {
  model::Machine machine;
  std::string notes;  // how each figure was measured, with the raw times (for the file's comments)
};

// Collective over comm. Throws strata::Error (or BackendError from MPI) on failure.
Calibration calibrate(MPI_Comm comm);

}  // namespace tune
