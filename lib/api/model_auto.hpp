// "auto" from the cost model: when a communicator's all_reduce_spec is
// "auto" and STRATA_MODEL_FILE names a .model file (strata-tune --calibrate
// writes one; docs/SCALING.md), its all-reduce plans on host memory over
// several nodes, a core per rank, are the ones the model predicts fastest
// for its layout (model::spec_from_model) instead of the fixed table. Reduce, broadcast,
// the blockwise collectives and CUDA memory keep their tables: the model
// has formulas for all-reduce only. Internal header.
#pragma once

#include <mpi.h>

#include <memory>

#include "plan/spec.hpp"
#include "strata/topology.hpp"

namespace strata::api {

// Whether this rank asks for it: `spec` is auto and STRATA_MODEL_FILE is
// set and not empty. Ranks must agree (agree_on_call_check).
bool model_auto_wanted(const plan::Spec& spec);

// Collective over `comm`: rank 0 reads the file STRATA_MODEL_FILE names and,
// on several nodes with a core per rank, picks plans for `topology`'s
// shape, keeping `incumbent`'s (the fixed table's) plan at each size unless
// the model predicts a clear gain (model::spec_from_model's margin, 10%);
// every rank gets the same spec (rank 0's text, broadcast). Null
// elsewhere, where auto keeps its table: on one node (pscpu, measured
// fastest at every size; the model's one shared-memory link mispredicts
// the 16-64 KiB rounds) and where ranks outnumber cores (the model's
// measured error there was up to +190%, and its picks ran up to 3.4 times
// slower than the table's; docs/SCALING.md).
// Rank 0 logs the choice at INFO and, once per process, a warning that the
// model is not validated for this layout. Throws InvalidArgument on every
// rank when rank 0 cannot read or parse the file (on one node too).
std::shared_ptr<const plan::Spec> modelled_all_reduce(MPI_Comm comm, int rank, const Topology& topology,
                                                     const plan::Spec& incumbent);

}  // namespace strata::api
