#include "gpu/pinned_all_gather.hpp"

#include "host/transport.hpp"
#include "util/slice.hpp"

namespace strata::gpu {

void pinned_all_gather(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, backend.deadline(), backend.info(), backend.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const int rank = t.rank(), size = t.size();
  auto* staged = static_cast<std::byte*>(backend.pinned(0, job.count * element));
  auto* out = static_cast<std::byte*>(job.out);
  if (rank < owners) {
    const util::Slice mine = util::owner_slice(job.count, std::size_t(owners), std::size_t(rank));
    backend.copy(staged + mine.offset * element, out + mine.offset * element, mine.count * element,
                 Copy::device_to_host);
    backend.wait();
  }
  host::Requests requests;
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::owner_slice(job.count, std::size_t(owners), std::size_t(s));
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
    const util::Slice slice = util::owner_slice(job.count, std::size_t(owners), std::size_t(s));
    if (s != rank && slice.count > 0)
      backend.copy(out + slice.offset * element, staged + slice.offset * element, slice.count * element,
                   Copy::host_to_device);
  }
  backend.wait();
}

}  // namespace strata::gpu
