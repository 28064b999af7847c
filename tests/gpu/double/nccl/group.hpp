// NCCL groups as the calling thread sees them: ncclGroupStart/End nest;
// inside a group, initialisations and operations wait until the outermost
// ncclGroupEnd; outside one, each call is a group of its own. At the end of
// a group the operations go to their streams, one stream operation per
// stream driving all of that stream's work together. For non-blocking
// communicators the end sometimes (seeded) returns ncclInProgress and holds
// the work back until ncclCommGetAsyncError is polled, as NCCL may: a stream
// touched meanwhile is reported (stream.hpp: Stream::held). Work for a
// capturing stream becomes one node of its capture per group end, which
// makes the group's works anew (numbered then) at every graph launch.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "work.hpp"

namespace gpu_double::nccl {

// The thread's group depth and the id of its current outermost group (0
// outside a group).
int group_depth();
long group_id();

void group_start();
// Ends one level; at the outermost, launches what the group held.
ncclResult_t group_end(const char* call);

// Adds an initialisation (after ncclCommInitRank*'s checks) or an operation
// to the thread's group; outside a group, runs it at once.
ncclResult_t add_init(const char* call, ncclComm* comm);
ncclResult_t add_work(const char* call, Stream* stream, std::unique_ptr<Work> work);

// An operation for a capturing stream: `make` makes its work at each launch
// of the graph (NCCL numbering is not consumed at capture time); `what`
// names it in messages.
using Recipe = std::function<std::unique_ptr<Work>()>;
ncclResult_t add_captured(const char* call, Stream* stream, ncclComm* comm, Recipe make, const std::string& what);

// ncclCommGetAsyncError's state: ncclInProgress while the initialisation,
// held work or a finalisation is pending (releasing held work once due).
ncclResult_t state_of(const char* call, ncclComm* comm);

// Drops held work of an aborted communicator.
void drop_held(ncclComm* comm);

}  // namespace gpu_double::nccl
