// Judging a Topology: which ranks are unbound or straddle NUMA domains, the
// launcher flags that fix it, which ranks of a node drive one GPU together,
// and the warnings: one line per job at most for each, and only where it
// matters. Internal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/topology.hpp"

namespace strata::topo {

// Bound to every core of a node that has more than one: the OS may move the
// rank anywhere, so it has no cache or NUMA locality.
bool unbound(const Topology& topology, const RankInfo& rank);

// Bound to cores of more than one NUMA domain (and not simply unbound).
bool spans_numa(const Topology& topology, const RankInfo& rank);

// The launch options that bind each rank to cores, in the words of the
// launcher that comes with the MPI library `mpi_library_version` names (as
// MPI_Get_library_version says it): Open MPI's mpirun, MPICH's hydra
// mpiexec, Intel MPI's pinning variables, Cray's; Slurm's srun beside each.
std::string binding_fix(std::string_view mpi_library_version);

// One line per problem found (empty when binding is fine), each naming the
// ranks and the launch options that fix it (binding_fix for the MPI library
// this process runs). Only ranks that share their
// host with another rank of the communicator count: a rank alone on its
// host competes with nobody (and one rank per host with threads of its own
// is rightly bound to every core), so a one-rank communicator never gets
// advice.
std::vector<std::string> binding_advice(const Topology& topology);

// Logs binding_advice as warnings, at most once per process and only in the
// process of MPI_COMM_WORLD rank 0: the binding is the launch's, the same
// for the whole job, so the job gets one line however many communicators
// it makes. Every rank may call it.
void warn_about_binding_once(const Topology& topology);

// One line (empty when no two ranks of a node drive one GPU): on how many
// nodes ranks share a GPU, the first such ranks with their GpuAssignment's
// `how` (which says with whom and why), what it costs (NCCL cannot run
// among them) and the fix.
std::string gpu_sharing_advice(const Topology& topology);

// Logs gpu_sharing_advice as a warning, on the rule of
// warn_about_binding_once: once, from MPI_COMM_WORLD rank 0's process.
void warn_about_shared_gpus_once(const Topology& topology);

}  // namespace strata::topo
