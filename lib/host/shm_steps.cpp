#include "host/shm_steps.hpp"

#include "util/flight_recorder.hpp"

namespace strata::host::shm::steps {

void throw_difference(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  std::vector<plan::Fingerprint> all;
  for (int r = 0; r < seg.local_size(); ++r) all.push_back(seg.fingerprint(r, round));
  publish_consumed(seg, round);
  plan::throw_mismatch(t.info(), t.rank(), all);
}

void publish_check(const ShmSegment& seg, std::uint64_t round, const plan::Fingerprint& check) {
  seg.fingerprint(seg.local_rank(), round) = check;
  seg.digest(seg.local_rank(), round) = plan::digest(check);
}

void verify_control(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  // Digests first (in the lines `staged` already brought over); whole
  // fingerprints only to describe a difference.
  const std::uint64_t mine = seg.digest(seg.local_rank(), round);
  for (int r = 0; r < seg.local_size(); ++r)
    if (seg.digest(r, round) != mine) throw_difference(t, seg, round);
  util::flight::mark_checked();  // (a check riding in a round: the call's only one)
}

void verify_in_sets(Transport& t, const ShmSegment& seg, std::uint64_t round, std::size_t at,
                    std::uint64_t digest) {
  for (int r = 0; r < seg.local_size(); ++r)
    if (r != seg.local_rank() && get_digest(seg.area(r, round) + at) != digest) throw_difference(t, seg, round);
  util::flight::mark_checked();
}

}  // namespace strata::host::shm::steps
