// "auto" from the cost model: when a communicator's all_reduce_spec is
// "auto" and STRATA_MODEL_FILE names a .model file (strata-tune --calibrate
// writes one; docs/SCALING.md), its all-reduce plans on host memory over
// several nodes are the ones the model predicts fastest for its layout
// (model::spec_from_model) instead of the fixed table. Reduce, broadcast,
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
// on several nodes, picks plans for `topology`'s shape; every rank gets the
// same spec (rank 0's text, broadcast). Null on one node: there auto keeps
// its table (pscpu, measured fastest at every size; the model's one
// shared-memory link mispredicts the 16-64 KiB rounds, docs/SCALING.md).
// Rank 0 logs the choice at INFO and, once per process, a warning that the
// model is not validated for this layout. Throws InvalidArgument on every
// rank when rank 0 cannot read or parse the file (on one node too).
std::shared_ptr<const plan::Spec> modelled_all_reduce(MPI_Comm comm, int rank, const Topology& topology);

}  // namespace strata::api
