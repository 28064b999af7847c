// "host:rank" of this process, for messages. The rank is the MPI_COMM_WORLD
// rank (or "?" before MPI_Init), so messages from different communicators
// still name the same process the same way. Every strata error message
// begins "strata [host:rank]: " (located).
#pragma once

#include <string>
#include <string_view>

namespace strata::util {

std::string hostname();
// The running kernel's boot id (/proc/sys/kernel/random/boot_id), "" where
// it cannot be read: one machine's network namespaces and containers share
// it, which their hostnames may not.
std::string boot_id();
int world_rank();          // -1 before MPI_Init, after MPI_Finalize, or when MPI cannot say
std::string where();       // "host:rank"

// "strata [host:rank]: " + message; a message that already begins with a
// location ("strata [") is returned as it is.
std::string located(std::string_view message);

// `message` without the "strata [host:rank]: " it may begin with: for
// quoting one of this process's errors inside another.
std::string_view unlocated(std::string_view message);

}  // namespace strata::util
