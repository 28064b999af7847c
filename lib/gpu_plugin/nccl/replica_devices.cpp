#include "gpu_plugin/nccl/replica_devices.hpp"

#include <fmt/format.h>

#include "host/transport.hpp"
#include "strata/errors.hpp"
#include "topo/gpu_plane.hpp"
#include "util/abandoned.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::nccl {

ReplicaDevices::~ReplicaDevices() {
  if (!engine_.broken_reason().empty()) util::keep_forever(gathered_.release());
}

bool ReplicaDevices::usable(const std::vector<int>& mine) {
  table_ = gather(mine);
  const topo::ReplicaPlane plane = topo::decide_replicas(engine_.rows(), table_);
  if (!plane.mismatch.empty()) throw Mismatch(fmt::format("strata [{}]: {}", util::where(), plane.mismatch));
  if (!plane.invalid.empty()) throw InvalidArgument(fmt::format("strata [{}]: {}", util::where(), plane.invalid));
  return plane.nccl.usable;
}

std::vector<std::vector<int>> ReplicaDevices::gather(const std::vector<int>& mine) {
  const MPI_Comm comm = engine_.comm();
  int size = 1;
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));
  host::Transport bounded(comm, engine_.deadline(), engine_.info(), engine_.workspace());
  Gathered& g = *gathered_;
  g.count = int(mine.size());
  g.counts.assign(std::size_t(size), 0);
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallgather(&g.count, 1, MPI_INT, g.counts.data(), 1, MPI_INT, comm, &request));
  bounded.wait_collective(request);
  g.offsets.assign(std::size_t(size), 0);
  int total = 0;
  for (int r = 0; r < size; ++r) g.offsets[std::size_t(r)] = total, total += g.counts[std::size_t(r)];
  g.mine = mine;
  g.all.assign(std::size_t(total), -1);
  STRATA_CHECK_MPI(MPI_Iallgatherv(g.mine.data(), g.count, MPI_INT, g.all.data(), g.counts.data(), g.offsets.data(),
                                   MPI_INT, comm, &request));
  bounded.wait_collective(request);
  std::vector<std::vector<int>> table(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    table[std::size_t(r)].assign(g.all.begin() + g.offsets[std::size_t(r)],
                                 g.all.begin() + g.offsets[std::size_t(r)] + g.counts[std::size_t(r)]);
  return table;
}

}  // namespace strata::nccl
