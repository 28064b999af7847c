// Host algorithms on CUDA data: the level the execute stage uses when a
// plan runs a host algorithm (xring, pscpu, ...) on CUDA tensors. Not a
// registry entry: any host algorithm of the registry runs this way.
#pragma once

#include <memory>

#include "gpu/backend.hpp"
#include "host/algorithm.hpp"
#include "plan/level.hpp"

namespace strata::gpu {

// Host algorithm `algorithm` over the group's MPI communicator, chunk by
// chunk through the backend's ring of pinned staging buffers, device-host
// copies of other chunks overlapping the MPI transfers of the current one.
// As a node level its reduce-scatter all-reduces the whole buffer and its
// all-gather exchanges slices through pinned memory. Waits itself.
std::unique_ptr<plan::Level> make_staged_level(Backend& backend, const host::Algorithm& algorithm,
                                               plan::Group group);

}  // namespace strata::gpu
