// RingStream: the pipelined engine under xring. A rank receives a sequence
// of chunks from its ring predecessor and either reduces each into its
// accumulator or stores it, then (optionally) forwards it to its successor,
// chunk by chunk: reduction of chunk k overlaps the transfer of chunk k+1,
// and forwarding starts before the whole segment has arrived.
//
// Both neighbours derive the same chunk sequence from the same Job, so a
// single MPI tag per ring suffices: same-tag messages between two ranks
// match in order. At most `kWindow` receives are in flight per ring, which
// bounds scratch memory to kWindow chunks per ring.
#pragma once

#include <cstddef>
#include <vector>

#include "host/algorithm.hpp"
#include "util/slice.hpp"

namespace strata::host {

class RingStream {
 public:
  static constexpr std::size_t kWindow = 4;

  struct Item {
    util::Slice where;     // elements of the buffer this chunk covers
    bool reduce = false;   // acc[where] = own[where] op incoming; else incoming lands in acc[where]
    bool forward = false;  // then send acc[where] on to the successor
  };

  // `own` is this rank's input (read by reductions and initial sends), `acc`
  // the buffer results accumulate in (may equal own). `scratch` holds
  // kWindow chunks of `chunk_elems` elements.
  RingStream(Transport& t, const Job& job, const void* own, void* acc, int successor, int predecessor, int tag,
             std::byte* scratch, std::size_t chunk_elems);

  // Chunks of `own` sent to the successor first (before any receive).
  void add_initial_send(util::Slice where);
  void add_item(const Item& item) { items_.push_back(item); }

  // Post the initial sends.
  void start();
  // Make whatever progress is possible without blocking; true if any.
  bool advance();
  bool received_all() const { return completed_ == items_.size(); }
  // The peer this stream is waiting on (for timeout messages).
  int waiting_on() const { return received_all() ? successor_ : predecessor_; }
  // Wait for the remaining sends (after received_all()).
  void finish();

  // Splits a slice into chunks of at most chunk_elems elements.
  template <typename Fn>
  static void for_each_chunk(util::Slice slice, std::size_t chunk_elems, Fn fn) {
    for (std::size_t done = 0; done < slice.count; done += chunk_elems)
      fn(util::Slice{slice.offset + done, std::min(chunk_elems, slice.count - done)});
  }

 private:
  std::byte* at(const void* base, util::Slice where) const;
  void post_receives();

  Transport& t_;
  const Job& job_;
  const void* own_;
  void* acc_;
  int successor_, predecessor_, tag_;
  std::byte* scratch_;
  std::size_t chunk_elems_;
  std::size_t element_;
  std::vector<util::Slice> initial_;
  std::vector<Item> items_;
  // A receive into acc may land on bytes an earlier send still reads (in
  // place, or a forwarded partial): such a receive waits for exactly those
  // sends. Waiting for all earlier sends instead would deadlock: the
  // successor receives our last reduce-scatter forward only after its own
  // gate opens.
  struct PendingSend {
    const std::byte* begin;
    const std::byte* end;
    Requests requests;
  };
  bool sends_done_overlapping(const std::byte* begin, const std::byte* end);
  void send(const void* base, util::Slice where);

  std::size_t posted_ = 0, completed_ = 0;
  std::vector<Requests> receives_;  // one per window slot
  std::vector<PendingSend> sends_;
};

}  // namespace strata::host
