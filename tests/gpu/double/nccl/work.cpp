#include "work.hpp"

#include <fmt/format.h>

#include <cstring>

#include "devices.hpp"
#include "elementwise.hpp"
#include "memory.hpp"
#include "report.hpp"

namespace gpu_double::nccl {
namespace {

using strata::DataType;
using strata::ReduceOp;

constexpr std::uint64_t kMessageMagic = 0x5354524154414d53ull;

bool dtype_of(ncclDataType_t t, DataType* d) {
  switch (t) {
    case ncclInt8: *d = DataType::i8; return true;
    case ncclUint8: *d = DataType::u8; return true;
    case ncclInt32: *d = DataType::i32; return true;
    case ncclUint32: *d = DataType::u32; return true;
    case ncclInt64: *d = DataType::i64; return true;
    case ncclUint64: *d = DataType::u64; return true;
    case ncclFloat16: *d = DataType::f16; return true;
    case ncclFloat32: *d = DataType::f32; return true;
    case ncclFloat64: *d = DataType::f64; return true;
    case ncclBfloat16: *d = DataType::bf16; return true;
    default: return false;
  }
}

ReduceOp op_of(int op) {
  switch (op) {
    case ncclProd: return ReduceOp::prod;
    case ncclMin: return ReduceOp::min;
    case ncclMax: return ReduceOp::max;
    default: return ReduceOp::sum;
  }
}

class Collective final : public Work {
 public:
  Collective(ncclComm* comm, const Descriptor& d, std::uint64_t first, std::uint64_t steps, const void* send, void* recv,
             std::string label)
      : Work(comm, std::move(label)), d_(d), first_(first), steps_(steps), send_(send), recv_(recv) {
    dtype_of(ncclDataType_t(d.dtype), &dtype_);
    element_ = element_bytes(dtype_);
    per_step_ = kChunkBytes / element_;
    const std::size_t n = std::size_t(comm->nranks);
    send_bytes_ = d.count * element_ * (CollKind(d.kind) == CollKind::reduce_scatter ? n : 1);
    recv_bytes_ = d.count * element_ * (CollKind(d.kind) == CollKind::all_gather ? n : 1);
    if (send_ && sends()) uses_.push_back(range_of(send_, send_bytes_));
    if (recv_ && receives()) uses_.push_back(range_of(recv_, recv_bytes_));
  }

  bool advance() override {
    if (finished_) return false;
    Clique& c = *comm_->clique;
    if (!resolved_ && !resolve()) return true;
    const std::uint64_t s = first_ + k_;
    const int n = comm_->nranks, me = comm_->rank;
    if (!posted_) {
      for (int q = 0; q < n; ++q)
        if (c.slot(q).consumed.load(std::memory_order_acquire) + 1 < s) return false;
      post(c.slot_data(me));
      if (k_ == 0) c.slot(me).descriptor = d_;
      c.slot(me).posted.store(s, std::memory_order_release);
      c.ring_doorbell();
      posted_ = true;
      return true;
    }
    for (int q = 0; q < n; ++q)
      if (c.slot(q).posted.load(std::memory_order_acquire) < s) return false;
    if (k_ == 0)
      for (int q = 0; q < n; ++q)
        if (!(c.slot(q).descriptor == d_)) {
          c.fail(fmt::format("the ranks' NCCL calls diverge on communicator {}: rank {} calls {}, rank {} calls {}",
                             c.name(), me, describe(d_), q, describe(c.slot(q).descriptor)));
          return true;
        }
    collect(c);
    c.slot(me).consumed.store(s, std::memory_order_release);
    c.ring_doorbell();
    posted_ = false;
    if (++k_ == steps_) finished_ = true;
    return true;
  }

 private:
  CollKind kind() const { return CollKind(d_.kind); }
  bool sends() const { return kind() != CollKind::broadcast || comm_->rank == d_.root; }
  bool receives() const { return kind() != CollKind::reduce || comm_->rank == d_.root; }

  bool resolve() {
    resolved_ = true;
    if (sends() && send_bytes_ && !(in_ = device_memory("sendbuff", send_, send_bytes_))) return false;
    if (receives() && recv_bytes_ && !(out_ = device_memory("recvbuff", recv_, recv_bytes_))) return false;
    return true;
  }

  // This step's element range of the count.
  std::size_t begin() const { return std::size_t(k_) * per_step_; }
  std::size_t length() const { return std::min<std::size_t>(per_step_, d_.count - std::min<std::size_t>(d_.count, begin())); }

  void post(std::byte* slot) {
    const std::size_t i0 = begin(), bytes = length() * element_;
    if (!sends() || bytes == 0) return;
    if (kind() == CollKind::reduce_scatter) {
      for (int dest = 0; dest < comm_->nranks; ++dest)
        std::memcpy(slot + std::size_t(dest) * kChunkBytes, in_ + (std::size_t(dest) * d_.count + i0) * element_, bytes);
    } else {
      std::memcpy(slot, in_ + i0 * element_, bytes);
    }
  }

  void collect(Clique& c) {
    const std::size_t i0 = begin(), count = length(), bytes = count * element_;
    if (!receives() || count == 0) return;
    const int n = comm_->nranks, me = comm_->rank;
    switch (kind()) {
      case CollKind::broadcast: std::memcpy(out_ + i0 * element_, c.slot_data(d_.root), bytes); return;
      case CollKind::all_gather:
        for (int q = 0; q < n; ++q) std::memcpy(out_ + (std::size_t(q) * d_.count + i0) * element_, c.slot_data(q), bytes);
        return;
      default: {
        const std::size_t part = kind() == CollKind::reduce_scatter ? std::size_t(me) * kChunkBytes : 0;
        std::byte* acc = out_ + i0 * element_;
        std::memcpy(acc, c.slot_data(0) + part, bytes);
        for (int q = 1; q < n; ++q)
          combine(acc, acc, c.slot_data(q) + part, count, dtype_, op_of(d_.op), Semantics::nccl);
      }
    }
  }

  Descriptor d_;
  std::uint64_t first_, steps_, k_ = 0;
  const void* send_;
  void* recv_;
  DataType dtype_ = DataType::u8;
  std::size_t element_ = 1, per_step_ = 1, send_bytes_ = 0, recv_bytes_ = 0;
  std::byte *in_ = nullptr, *out_ = nullptr;
  bool resolved_ = false, posted_ = false;
};

struct MessageHeader {
  std::uint64_t magic, number, count;
  std::int32_t dtype, from;
};

// Copies into (or out of) a ring buffer of kRingBytes at byte offset `at`.
void ring_copy(std::byte* ring, std::uint64_t at, std::byte* data, std::size_t bytes, bool into_ring);

// One pass of a message's payload through a ring: moves what `space` bytes
// allow of the `total - done` left, at byte `at` of the ring, into it (a
// sender) or out of it (a receiver). Returns the bytes moved.
std::size_t pass_payload(std::byte* ring, std::uint64_t at, std::byte* data, std::size_t& done, std::size_t total,
                         std::size_t space, bool into_ring) {
  const std::size_t take = std::min(total - done, space);
  if (take > 0) ring_copy(ring, at, data + done, take, into_ring);
  done += take;
  return take;
}

void ring_copy(std::byte* ring, std::uint64_t at, std::byte* data, std::size_t bytes, bool into_ring) {
  const std::size_t first = std::min<std::size_t>(bytes, kRingBytes - at % kRingBytes);
  std::byte* position = ring + at % kRingBytes;
  if (into_ring) {
    std::memcpy(position, data, first);
    std::memcpy(ring, data + first, bytes - first);
  } else {
    std::memcpy(data, position, first);
    std::memcpy(data + first, ring, bytes - first);
  }
}

class Send final : public Work {
 public:
  Send(ncclComm* comm, const void* buffer, std::size_t count, ncclDataType_t dtype, int peer, std::uint64_t number,
       std::string label)
      : Work(comm, std::move(label)), buffer_(buffer), peer_(peer) {
    header_ = {kMessageMagic, number, count, dtype, comm->rank};
    bytes_ = count * nccl_element_bytes(dtype);
    if (bytes_) uses_.push_back(range_of(buffer, bytes_));
  }

  bool advance() override {
    if (finished_) return false;
    if (bytes_ && !data_ && !(data_ = device_memory("sendbuff", buffer_, bytes_))) return true;
    Clique& c = *comm_->clique;
    Ring& r = c.ring(comm_->rank, peer_);
    std::byte* ring = c.ring_data(comm_->rank, peer_);
    const std::uint64_t head = r.head.load(std::memory_order_relaxed);
    const std::uint64_t room = kRingBytes - (head - r.tail.load(std::memory_order_acquire));
    std::size_t moved = 0;
    if (!header_sent_) {
      if (room < sizeof header_) return false;
      ring_copy(ring, head, reinterpret_cast<std::byte*>(&header_), sizeof header_, true);
      moved = sizeof header_;
      header_sent_ = true;
    }
    moved += pass_payload(ring, head + moved, data_, sent_, bytes_, room - moved, true);
    if (moved == 0) return false;
    r.head.store(head + moved, std::memory_order_release);
    c.ring_doorbell();
    if (sent_ == bytes_) finished_ = true;
    return true;
  }

 private:
  const void* buffer_;
  int peer_;
  MessageHeader header_{};
  std::size_t bytes_ = 0, sent_ = 0;
  std::byte* data_ = nullptr;
  bool header_sent_ = false;
};

class Receive final : public Work {
 public:
  Receive(ncclComm* comm, void* buffer, std::size_t count, ncclDataType_t dtype, int peer, std::uint64_t number,
          std::string label)
      : Work(comm, std::move(label)), buffer_(buffer), count_(count), dtype_(dtype), peer_(peer), number_(number) {
    bytes_ = count * nccl_element_bytes(dtype);
    if (bytes_) uses_.push_back(range_of(buffer, bytes_));
  }

  bool advance() override {
    if (finished_) return false;
    if (bytes_ && !data_ && !(data_ = device_memory("recvbuff", buffer_, bytes_))) return true;
    Clique& c = *comm_->clique;
    Ring& r = c.ring(peer_, comm_->rank);
    std::byte* ring = c.ring_data(peer_, comm_->rank);
    const std::uint64_t tail = r.tail.load(std::memory_order_relaxed);
    const std::uint64_t ready = r.head.load(std::memory_order_acquire) - tail;
    std::size_t moved = 0;
    if (!header_read_) {
      if (ready < sizeof(MessageHeader)) return false;
      MessageHeader h;
      ring_copy(ring, tail, reinterpret_cast<std::byte*>(&h), sizeof h, false);
      moved = sizeof h;
      header_read_ = true;
      if (h.magic != kMessageMagic || h.count != count_ || h.dtype != dtype_ || h.number != number_) {
        c.fail(fmt::format("the ranks' NCCL calls diverge on communicator {}: rank {} calls ncclSend #{}(count {}, "
                           "datatype {}) to rank {}, which calls ncclRecv #{}(count {}, datatype {}) from it",
                           c.name(), peer_, h.number, h.count, h.dtype, comm_->rank, number_, count_, int(dtype_)));
        return true;
      }
    }
    moved += pass_payload(ring, tail + moved, data_, received_, bytes_, ready - moved, false);
    if (moved == 0) return false;
    r.tail.store(tail + moved, std::memory_order_release);
    c.ring_doorbell();
    if (received_ == bytes_) finished_ = true;
    return true;
  }

 private:
  void* buffer_;
  std::size_t count_;
  ncclDataType_t dtype_;
  int peer_;
  std::uint64_t number_;
  std::size_t bytes_ = 0, received_ = 0;
  std::byte* data_ = nullptr;
  bool header_read_ = false;
};

}  // namespace

std::size_t nccl_element_bytes(ncclDataType_t dtype) {
  DataType d;
  return dtype_of(dtype, &d) ? element_bytes(d) : 0;
}

std::byte* Work::device_memory(const char* what, const void* p, std::size_t bytes) {
  std::byte* at = device_bytes(label_.c_str(), what, p, bytes, comm_->device);
  if (!at) {
    fail_device(comm_->device, cudaErrorIllegalAddress);
    set_error(comm_, ncclUnhandledCudaError);
    finished_ = true;
  }
  return at;
}

std::unique_ptr<Work> collective(ncclComm* comm, CollKind kind, const void* send, void* recv, std::size_t count,
                                 ncclDataType_t dtype, int op, int root) {
  Descriptor d;
  d.number = comm->collectives++;
  d.kind = int(kind);
  d.count = count;
  d.dtype = int(dtype);
  d.op = op;
  d.root = root;
  const std::size_t per_step = kChunkBytes / std::max<std::size_t>(1, nccl_element_bytes(dtype));
  const std::uint64_t steps = std::max<std::uint64_t>(1, (count + per_step - 1) / per_step);
  const std::uint64_t first = comm->steps + 1;
  comm->steps += steps;
  return std::make_unique<Collective>(comm, d, first, steps, send, recv,
                                      fmt::format("{} on {}", describe(d), comm->label));
}

std::unique_ptr<Work> send(ncclComm* comm, const void* buffer, std::size_t count, ncclDataType_t dtype, int peer) {
  const std::uint64_t number = comm->sends[std::size_t(peer)]++;
  return std::make_unique<Send>(comm, buffer, count, dtype, peer, number,
                                fmt::format("ncclSend #{}(count {}, datatype {}) to rank {} on {}", number, count,
                                            int(dtype), peer, comm->label));
}

std::unique_ptr<Work> receive(ncclComm* comm, void* buffer, std::size_t count, ncclDataType_t dtype, int peer) {
  const std::uint64_t number = comm->receives[std::size_t(peer)]++;
  return std::make_unique<Receive>(comm, buffer, count, dtype, peer, number,
                                   fmt::format("ncclRecv #{}(count {}, datatype {}) from rank {} on {}", number, count,
                                               int(dtype), peer, comm->label));
}

void drive(std::vector<std::unique_ptr<Work>>& works) {
  std::vector<std::uint32_t> seen(works.size());
  for (;;) {
    for (std::size_t i = 0; i < works.size(); ++i) seen[i] = works[i]->comm()->clique->header().doorbell.load();
    bool progressed = false, done = true;
    std::size_t waiting = works.size();
    for (std::size_t i = 0; i < works.size(); ++i) {
      Work& w = *works[i];
      if (w.finished()) continue;
      Clique& c = *w.comm()->clique;
      if (w.comm()->aborted.load()) {
        w.stop();
        continue;
      }
      if (c.failed()) {
        // Every rank reports the divergence it stopped on.
        violation(w.label().c_str(), c.failure());
        set_error(w.comm(), ncclInvalidUsage);
        w.stop();
        continue;
      }
      if (w.error) {
        set_error(w.comm(), ncclSystemError);
        w.stop();
        continue;
      }
      if (!w.hang) progressed = w.advance() || progressed;
      if (!w.finished()) {
        done = false;
        if (waiting == works.size()) waiting = i;
      }
    }
    if (done) break;
    if (!progressed) works[waiting]->comm()->clique->wait_doorbell(seen[waiting], 2000);
  }
  for (auto& w : works) --w->comm()->running;
}

}  // namespace gpu_double::nccl
