// --stream-ordered's timing: a call that enqueues work on a stream and
// returns, timed three ways in each iteration of the apps' usual loop
// (timing.hpp: a barrier first, the slowest rank, the median over
// iterations):
//   complete  from before the call until the stream has drained (the start
//             event, the call, the stop event, cudaStreamSynchronize): what
//             the blocking call's time is, so algbw and the overhead over
//             the baseline compare like for like;
//   host      from entering the call to its return: what a stream-ordered
//             call costs the host;
//   device    between the events recorded on the stream just before and
//             just after the call (cudaEventElapsedTime): how long the
//             device took from where the call's work could start.
// Nothing is in flight when an iteration starts: the previous one waited
// for the stream.
#pragma once

#include <mpi.h>

#include <functional>

#include "cuda_buffers.hpp"
#include "timing.hpp"

namespace bench {

struct StreamTiming {
  Timing complete, host, device;
};

// Times `enqueue` (which puts work on `stream` and may return before it has
// run) `warmup` + `iters` times as above. Collective over `comm`. Throws
// what `enqueue` or the stream throws.
StreamTiming time_on_stream(MPI_Comm comm, int warmup, int iters, cuda::DeviceStream& stream,
                            const std::function<void()>& enqueue);

}  // namespace bench
