#include "exec/host_runtime.hpp"

#include "exec/node_segment.hpp"

namespace strata::exec {
namespace {

// Pipeline granularity of the chunked algorithms when Config leaves it 0.
constexpr std::size_t kDefaultChunkBytes = 256 * 1024;

}  // namespace

void HostRuntime::start(MPI_Comm comm, int rank, int size, const topo::NodeSplit& split, std::size_t chunk_bytes,
                        plan::Numerics numerics) {
  segment_ = make_node_segment(split);
  chunk_bytes_ = chunk_bytes ? chunk_bytes : kDefaultChunkBytes;
  context_ = {comm, rank, size, &split, segment_.get(), &workspace_, &landing_, numerics};
}

void HostRuntime::abandon() {
  workspace_.abandon();
  staging_.abandon();
  landing_.abandon();
}

}  // namespace strata::exec
