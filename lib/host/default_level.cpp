#include "host/default_level.hpp"

#include <cstring>

#include "host/shm_direct.hpp"
#include "host/shm_rounds.hpp"
#include "util/copy.hpp"
#include "util/slice.hpp"

namespace strata::host {

DefaultLevel::DefaultLevel(Transport& transport, const Algorithm& algorithm, ShmSegment* segment)
    : transport_(transport), algorithm_(algorithm), segment_(segment) {
  transport_.set_shared_memory(segment);
}

void DefaultLevel::copy(const plan::Job& job) {
  if (job.out != job.in && job.out) util::copy_bytes(job.out, job.in, job.bytes());
}

void DefaultLevel::reduce_scatter(const plan::Job& job, int owners) {
  if (segment_) {
    shm::reduce_scatter(transport_, *segment_, job.in, job.out, job.count, job.dtype, job.op, owners);
    return;
  }
  if (algorithm_.reduce_scatter && owners == transport_.size()) {
    algorithm_.reduce_scatter(transport_, job);
    return;
  }
  plan::Job whole = job;
  whole.shards = 1;
  algorithm_.all_reduce(transport_, whole);
}

void DefaultLevel::all_gather(const plan::Job& job, int owners) {
  if (segment_) {
    shm::all_gather(transport_, *segment_, job.out, job.count, job.dtype, owners);
    return;
  }
  if (algorithm_.all_gather && owners == transport_.size()) {
    algorithm_.all_gather(transport_, job);
    return;
  }
  const std::size_t element = dtype_size(job.dtype);
  auto* data = static_cast<std::byte*>(job.out);
  Requests requests;
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::owner_slice(job.count, static_cast<std::size_t>(owners), static_cast<std::size_t>(s));
    if (slice.count == 0) continue;
    std::byte* at = data + slice.offset * element;
    if (s == transport_.rank()) {
      for (int peer = 0; peer < transport_.size(); ++peer)
        if (peer != s) transport_.isend(requests, at, slice.count * element, peer);
    } else {
      transport_.irecv(requests, at, slice.count * element, s);
    }
  }
  transport_.wait(requests);
}

void DefaultLevel::all_gather_blocks(const plan::Job& job, int rank, int size) {
  if (!segment_) return plan::Level::all_gather_blocks(job, rank, size);
  const shm::direct::Range range = segment_->direct_sizes().all_gather;
  if (shm::direct::takes(*segment_, job.bytes(), range))
    shm::direct::all_gather_blocks(transport_, *segment_, job.in, job.out, job.bytes());
  else
    shm::all_gather_blocks(transport_, *segment_, job.in, job.out, job.count, job.dtype);
  shm::direct::watch_placement(transport_, *segment_, job.bytes(), range);
}

plan::Level& make_default_level(const Algorithm& algorithm, Transport& transport, ShmSegment* segment,
                                LevelSlot& slot) {
  return slot.emplace<DefaultLevel>(transport, algorithm, segment);
}

}  // namespace strata::host
