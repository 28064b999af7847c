// psgpu: "parameter server on GPU". Every rank sends slice s of its input to
// slice owner s over MPI (through pinned host memory); the owner uploads
// the contributions and reduces them on its GPU with strata's kernels in
// rank order (deterministic), then the finished slices are all-gathered the
// same way. No NCCL communicator is needed, so it also runs when several
// ranks share one GPU.
#include <cstring>

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "nccl/algorithms.hpp"
#include "host/transport.hpp"
#include "util/slice.hpp"

namespace strata::nccl {

void psgpu_reduce_scatter(Engine& e, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, e.deadline(), e.info(), e.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const std::size_t bytes = job.count * element;
  const int rank = t.rank(), size = t.size();
  const util::Slice mine = rank < owners ? util::even_slice(job.count, std::size_t(owners), std::size_t(rank))
                                         : util::Slice{};
  const std::size_t slice_bytes = mine.count * element;

  // My input to pinned memory, then the contributions to their owners.
  auto* staged = static_cast<std::byte*>(e.pinned(0, bytes));
  STRATA_CHECK_CUDA(cudaMemcpyAsync(staged, job.in, bytes, cudaMemcpyDeviceToHost, e.stream()));
  // Contributions land at [r * slice_bytes] of pinned slot 1, mine included.
  auto* gathered = static_cast<std::byte*>(e.pinned(1, slice_bytes * std::size_t(size)));
  auto* contributions = static_cast<std::byte*>(e.device_scratch(0, slice_bytes * std::size_t(size)));
  if (mine.count > 0)
    STRATA_CHECK_CUDA(cudaMemcpyAsync(contributions + std::size_t(rank) * slice_bytes,
                                      static_cast<const std::byte*>(job.in) + mine.offset * element, slice_bytes,
                                      cudaMemcpyDeviceToDevice, e.stream()));
  host::Requests requests;
  if (mine.count > 0)
    for (int r = 0; r < size; ++r)
      if (r != rank) t.irecv(requests, gathered + std::size_t(r) * slice_bytes, slice_bytes, r);
  e.wait();  // staged is complete
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::even_slice(job.count, std::size_t(owners), std::size_t(s));
    if (s != rank && slice.count > 0) t.isend(requests, staged + slice.offset * element, slice.count * element, s);
  }
  t.wait(requests);
  if (mine.count == 0) return;

  // Upload and reduce in rank order: acc = c0 op c1 op c2 ...
  for (int r = 0; r < size; ++r)
    if (r != rank)
      STRATA_CHECK_CUDA(cudaMemcpyAsync(contributions + std::size_t(r) * slice_bytes,
                                        gathered + std::size_t(r) * slice_bytes, slice_bytes, cudaMemcpyHostToDevice,
                                        e.stream()));
  reduce_in_rank_order(e, static_cast<std::byte*>(job.out) + mine.offset * element, contributions, slice_bytes, size,
                       mine.count, job.dtype, job.op);
  e.wait();
}

void reduce_in_rank_order(Engine& e, void* acc, const std::byte* contributions, std::size_t slice_bytes, int size,
                          std::size_t count, DataType dtype, ReduceOp op) {
  if (size == 1) {
    STRATA_CHECK_CUDA(cudaMemcpyAsync(acc, contributions, slice_bytes, cudaMemcpyDeviceToDevice, e.stream()));
    return;
  }
  cuda::reduce(acc, contributions, contributions + slice_bytes, count, dtype, op, e.stream());
  for (int r = 2; r < size; ++r)
    cuda::reduce(acc, acc, contributions + std::size_t(r) * slice_bytes, count, dtype, op, e.stream());
}

void psgpu_all_gather(Engine& e, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, e.deadline(), e.info(), e.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const int rank = t.rank(), size = t.size();
  auto* staged = static_cast<std::byte*>(e.pinned(0, job.count * element));
  auto* out = static_cast<std::byte*>(job.out);
  if (rank < owners) {
    const util::Slice mine = util::even_slice(job.count, std::size_t(owners), std::size_t(rank));
    STRATA_CHECK_CUDA(cudaMemcpyAsync(staged + mine.offset * element, out + mine.offset * element,
                                      mine.count * element, cudaMemcpyDeviceToHost, e.stream()));
    e.wait();
  }
  host::Requests requests;
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::even_slice(job.count, std::size_t(owners), std::size_t(s));
    if (slice.count == 0) continue;
    std::byte* at = staged + slice.offset * element;
    if (s == rank) {
      for (int r = 0; r < size; ++r)
        if (r != rank) t.isend(requests, at, slice.count * element, r);
    } else {
      t.irecv(requests, at, slice.count * element, s);
    }
  }
  t.wait(requests);
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::even_slice(job.count, std::size_t(owners), std::size_t(s));
    if (s != rank && slice.count > 0)
      STRATA_CHECK_CUDA(cudaMemcpyAsync(out + slice.offset * element, staged + slice.offset * element,
                                        slice.count * element, cudaMemcpyHostToDevice, e.stream()));
  }
  e.wait();
}

}  // namespace strata::nccl
