#include "host/ring_stream.hpp"

#include "host/reduce_kernel.hpp"

namespace strata::host {

RingStream::RingStream(Transport& t, const Job& job, const void* own, void* acc, int successor, int predecessor,
                       int tag, std::byte* scratch, std::size_t chunk_elems)
    : t_(t),
      job_(job),
      own_(own),
      acc_(acc),
      successor_(successor),
      predecessor_(predecessor),
      tag_(tag),
      scratch_(scratch),
      chunk_elems_(chunk_elems),
      element_(job.element_bytes()),
      receives_(kWindow) {}

std::byte* RingStream::at(const void* base, util::Slice where) const {
  return util::element_at(const_cast<void*>(base), where.offset, element_);
}

void RingStream::add_initial_send(util::Slice where) { initial_.push_back(where); }

void RingStream::start() {
  for (const util::Slice& where : initial_) send(own_, where);
}

void RingStream::send(const void* base, util::Slice where) {
  std::byte* begin = at(base, where);
  PendingSend pending{begin, begin + where.count * element_, {}};
  t_.isend(pending.requests, begin, where.count * element_, successor_, tag_);
  sends_.push_back(std::move(pending));
}

bool RingStream::sends_done_overlapping(const std::byte* begin, const std::byte* end) {
  for (PendingSend& s : sends_)
    if (!s.requests.empty() && s.begin < end && begin < s.end && !t_.test(s.requests)) return false;
  return true;
}

void RingStream::post_receives() {
  while (posted_ < items_.size() && posted_ - completed_ < kWindow) {
    const Item& item = items_[posted_];
    std::byte* into = item.reduce ? scratch_ + (posted_ % kWindow) * chunk_elems_ * element_ : at(acc_, item.where);
    if (!item.reduce && !sends_done_overlapping(into, into + item.where.count * element_)) return;
    t_.irecv(receives_[posted_ % kWindow], into, item.where.count * element_, predecessor_, tag_);
    ++posted_;
  }
}

bool RingStream::advance() {
  bool progressed = false;
  for (;;) {
    post_receives();
    if (completed_ == posted_) return progressed;
    Requests& oldest = receives_[completed_ % kWindow];
    if (!t_.test(oldest)) return progressed;
    const Item& item = items_[completed_];
    if (item.reduce) {
      const std::byte* incoming = scratch_ + (completed_ % kWindow) * chunk_elems_ * element_;
      reduce_into(at(acc_, item.where), at(own_, item.where), incoming, item.where.count, job_.dtype, job_.op);
    }
    if (item.forward) send(acc_, item.where);
    ++completed_;
    progressed = true;
  }
}

void RingStream::finish() {
  for (PendingSend& s : sends_) t_.wait(s.requests);
  sends_.clear();
}

}  // namespace strata::host
