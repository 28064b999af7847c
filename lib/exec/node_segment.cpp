#include "exec/node_segment.hpp"

#include "host/shm_rounds.hpp"

namespace strata::exec {

std::unique_ptr<host::ShmSegment> make_node_segment(const topo::NodeSplit& split) {
  if (split.local_size <= 1) return nullptr;
  return std::make_unique<host::ShmSegment>(split.node, host::shm::set_bytes_for(split.local_size));
}

}  // namespace strata::exec
