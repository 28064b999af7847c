// The three times of a stream-ordered call (stream_timing.hpp). The
// complete time is time_collective's own; the host and device times are
// taken inside each of its iterations and reduced the same way.
#include "stream_timing.hpp"

#include <algorithm>
#include <vector>

namespace bench {
namespace {

// Per-iteration seconds of this rank -> the Timing time_collective would
// report: the maximum over ranks per iteration (one MPI_Allreduce), then the
// median, minimum and maximum over iterations. Collective over `comm`.
Timing slowest_rank(MPI_Comm comm, std::vector<double> seconds) {
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX, comm);
  Timing t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t mid = seconds.size() / 2;
  const double median = seconds.size() % 2 ? seconds[mid] : (seconds[mid - 1] + seconds[mid]) / 2;
  t.median_us = median * 1e6;
  t.min_us = seconds.front() * 1e6;
  t.max_us = seconds.back() * 1e6;
  return t;
}

}  // namespace

StreamTiming time_on_stream(MPI_Comm comm, int warmup, int iters, cuda::DeviceStream& stream,
                            const std::function<void()>& enqueue) {
  std::vector<double> host, device;
  host.reserve(static_cast<std::size_t>(warmup + iters));
  device.reserve(static_cast<std::size_t>(warmup + iters));
  StreamTiming t;
  t.complete = time_collective(comm, warmup, iters, [&] {
    stream.mark_start();
    const double start = MPI_Wtime();
    enqueue();
    const double returned = MPI_Wtime();
    stream.mark_stop();
    stream.synchronize();
    host.push_back(returned - start);
    device.push_back(stream.elapsed_seconds());
  });
  // time_collective ran the warm-up calls first: they are not timed.
  host.erase(host.begin(), host.begin() + warmup);
  device.erase(device.begin(), device.begin() + warmup);
  t.host = slowest_rank(comm, std::move(host));
  t.device = slowest_rank(comm, std::move(device));
  return t;
}

}  // namespace bench
