// The GPU control plane: which ranks can drive a GPU at all, and over which
// groups of ranks NCCL may run (the whole communicator, each node, each
// cross-node group, the replica group of a batch with several GPUs per
// rank). Plain functions of a table that every rank holds identically (one
// row per rank, gathered once with the topology when the Communicator is
// constructed), so every rank reaches the same decisions without another
// message, and a setup problem raises the same error on every rank instead
// of leaving some of them waiting. No GPU is needed to test them.
//
// One GPU is (host identity, PCI bus id), as NCCL keys it: identical nodes
// have identical bus ids, so the bus id alone would call two nodes' GPU 0
// the same device. NCCL refuses a communicator in which two NCCL ranks
// drive one GPU ("Duplicate GPU detected"), so such a group is marked not
// usable, naming the two ranks and the GPU.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "plan/choose.hpp"

namespace strata::topo {

// cudaComputeMode values (kept as plain ints: this layer has no CUDA).
inline constexpr int kComputeDefault = 0;
inline constexpr int kComputeExclusiveThread = 1;  // deprecated by CUDA; treated like exclusive process
inline constexpr int kComputeProhibited = 2;
inline constexpr int kComputeExclusiveProcess = 3;

// One rank's row of the table.
struct GpuRow {
  std::string hostname;  // for messages
  std::string host;      // host identity (host_identity() of that rank's process)
  int node = 0;          // node index (real or virtual)
  int local_rank = 0;
  int device = -1;       // the CUDA device its CUDA tensors default to; -1 = none
  std::string problem;   // why device is -1 ("" otherwise)
  std::vector<std::string> bus_ids;  // PCI bus id of every CUDA device the process sees, by index, lower case
  std::vector<int> modes;            // compute mode of each of them (kCompute*), -1 = unknown

  // The bus id of CUDA device `index` of this process, "" when out of range.
  std::string bus_of(int index) const;
};

// Whether NCCL may run over one kind of group, and why not.
struct NcclVerdict {
  bool usable = true;
  std::string why;  // when not usable: which ranks share which GPU on which host
};

struct GpuPlane {
  // Non-empty: CUDA tensors cannot be used on this communicator (some rank
  // has no GPU, or ranks share a GPU in exclusive-process mode); every rank
  // raises Unavailable with this text, which names the lowest such rank.
  std::string unavailable;
  NcclVerdict world;  // the whole communicator
  NcclVerdict node;   // every node's ranks (usable only when usable on every node)
  NcclVerdict cross;  // every cross-node group (local ranks below the smallest node's size)

  // The planner's view: plan::Layout's NCCL flags set from the verdicts
  // (left as they are where CUDA tensors are unavailable: no CUDA call runs
  // there, and plans show what a cluster with NCCL everywhere runs).
  void apply_to(plan::Layout& layout) const;

  // Why `choice` (a plan for CUDA tensors) cannot run here: a level whose
  // algorithm needs NCCL runs over a group whose verdict refuses NCCL.
  // "" when it can. Flat plans run over the whole communicator;
  // hierarchical ones inside each node and across nodes.
  std::string refusal(const plan::Choice& choice) const;
};

// The plane of a communicator whose rank r has row rows[r]; `min_local_size`
// is the fewest ranks on any node (cross groups hold local ranks below it).
GpuPlane decide(std::span<const GpuRow> rows, int min_local_size);

// A batch with several replicas per rank: devices[r] lists rank r's replica
// devices (replica 0 first), as every rank reported them.
struct ReplicaPlane {
  std::string mismatch;  // non-empty: ranks hold different replica counts (Mismatch on every rank)
  std::string invalid;   // non-empty: a device index some rank's process does not have (InvalidArgument)
  NcclVerdict nccl;      // one NCCL rank per replica of every rank
};
ReplicaPlane decide_replicas(std::span<const GpuRow> rows, std::span<const std::vector<int>> devices);

// The bound of GPU setup steps (creating the GPU backend, each NCCL
// communicator, the replica decision): $STRATA_GPU_SETUP_TIMEOUT seconds,
// default 300, independent of any call's timeout and never unbounded.
// Throws InvalidArgument for a value that is not a number > 0.
double setup_seconds();

// NCCL's host identity of this process, as its getHostHash builds it:
// $NCCL_HOSTID when set, else the hostname followed by the boot id
// (/proc/sys/kernel/random/boot_id; the hostname alone when unreadable).
// Containers on one machine share the boot id; two machines never do.
std::string host_identity();

}  // namespace strata::topo
