// The last few entries a caller kept: what remembers a program's repeated
// calls (the interposer's routing, interpose/repeat.hpp; the argument
// checks, api/calls.cpp). A program often repeats a few calls in turn
// (several buffers per training step; OSU's validation alternates two), so
// a handful are kept, looked up newest first and replaced round robin.
// Not synchronised: each user keeps one per thread, or on a path that
// never runs concurrently.
#pragma once

namespace strata::util {

template <typename Entry, int kWays = 4>
class Recent {
 public:
  // The kept entry that `matches` (a predicate on an Entry) accepts, the
  // newest looked at first; nullptr when none does.
  template <typename Matches>
  const Entry* find(Matches&& matches) {
    if (kept_[newest_] && matches(entries_[newest_])) return &entries_[newest_];  // a loop of one call stops here
    for (int at = 0; at < kWays; ++at) {
      if (kept_[at] && matches(entries_[at])) {
        newest_ = at;
        return &entries_[at];
      }
    }
    return nullptr;
  }

  // Keeps `entry` in place of one kept before (round robin after the newest).
  void keep(const Entry& entry) {
    newest_ = (newest_ + 1) % kWays;
    entries_[newest_] = entry;
    kept_[newest_] = true;
  }

 private:
  Entry entries_[kWays]{};
  bool kept_[kWays]{};
  int newest_ = 0;  // the last one found or kept
};

}  // namespace strata::util
