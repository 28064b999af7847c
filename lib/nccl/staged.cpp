// Host staging: run a host algorithm on CUDA data. The data is cut into
// chunks; all device-to-host copies are queued at once, each chunk's host
// collective starts as soon as its copy landed, and its host-to-device copy
// is queued right after, so copies of later (and earlier) chunks overlap the
// MPI transfers of the current one. Every rank cuts the same chunks, so the
// per-chunk collectives match up.
#include <algorithm>

#include "cuda/check.hpp"
#include "nccl/algorithms.hpp"
#include "strata/errors.hpp"

namespace strata::nccl {
namespace {

constexpr std::size_t kDefaultChunkBytes = 4u << 20;  // big enough to amortise a collective's latency


}  // namespace

void staged(Engine& e, MPI_Comm comm, Collective collective, const host::Algorithm& algorithm, const plan::Job& job,
            const util::Deadline& d, const plan::CallInfo& info) {
  if (job.count == 0) return;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool is_root = rank == job.root;
  // Who copies down (contributes) and who copies the result back up.
  const bool download = collective != Collective::broadcast || is_root;
  const bool receive = collective == Collective::all_reduce ? true
                       : collective == Collective::reduce   ? is_root
                                                                 : !is_root;
  const host::CollectiveFn run = host::entry_point(algorithm, collective);  // the planner checked it serves

  const std::size_t element = dtype_size(job.dtype);
  const std::size_t wanted = job.chunk_bytes ? std::max(job.chunk_bytes, kDefaultChunkBytes) : kDefaultChunkBytes;
  const std::size_t per_chunk = std::max<std::size_t>(1, wanted / element);
  const std::size_t chunks = (job.count + per_chunk - 1) / per_chunk;
  auto* host_data = static_cast<std::byte*>(e.pinned(0, job.count * element));
  const auto* src = static_cast<const std::byte*>(collective == Collective::broadcast ? job.out : job.in);
  auto* dst = static_cast<std::byte*>(job.out);

  if (download)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t first = c * per_chunk, n = std::min(per_chunk, job.count - first);
      STRATA_CHECK_CUDA(cudaMemcpyAsync(host_data + first * element, src + first * element, n * element,
                                        cudaMemcpyDeviceToHost, e.stream()));
      e.event(c).record(e.stream());
    }
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * per_chunk, n = std::min(per_chunk, job.count - first);
    if (download) e.wait(d, info, &e.event(c));
    host::Transport t(comm, d, info, e.workspace());
    plan::Job chunk;
    chunk.in = chunk.out = host_data + first * element;
    chunk.count = n;
    chunk.dtype = job.dtype;
    chunk.op = job.op;
    chunk.root = job.root;
    chunk.shards = job.shards;
    chunk.chunk_bytes = 256 * 1024;
    run(t, chunk);
    if (receive && dst)
      STRATA_CHECK_CUDA(cudaMemcpyAsync(dst + first * element, host_data + first * element, n * element,
                                        cudaMemcpyHostToDevice, e.stream()));
  }
  e.wait(d, info);
}

}  // namespace strata::nccl
