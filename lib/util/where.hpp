// "host:rank" of this process, for messages. The rank is the MPI_COMM_WORLD
// rank (or "?" before MPI_Init), so messages from different communicators
// still name the same process the same way.
#pragma once

#include <string>

namespace strata::util {

std::string hostname();
int world_rank();          // -1 before MPI_Init or after MPI_Finalize
std::string where();       // "host:rank"

}  // namespace strata::util
