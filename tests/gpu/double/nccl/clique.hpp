// The shared memory behind one NCCL unique id: every rank of the
// communicator maps it (several processes of one machine: NCCL's own
// bootstrap is not available to the double, and MPI is not either, so the
// id names a POSIX shared-memory segment). It holds
//   - the roll of members: who joined, with the host identity, PCI bus id
//     and device NCCL's own checks look at;
//   - one slot per rank for collective steps: a rank posts a chunk of its
//     contribution for step s, every rank reads all slots and computes its
//     own result for the chunk, then marks step s consumed; a slot is
//     written again only once every rank consumed the previous step. The
//     first step of each collective carries its descriptor (kind, count,
//     dtype, op, root, number), so ranks whose calls diverge are told so
//     instead of deadlocking;
//   - one ring per ordered pair of ranks for ncclSend/ncclRecv, each
//     message headed by its count, dtype and number;
//   - a doorbell (a futex word) rung on every change.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpu_double::nccl {

inline constexpr int kMaxRanks = 64;
inline constexpr std::size_t kChunkBytes = 256 * 1024;  // one rank's contribution to one step, per destination
inline constexpr std::size_t kRingBytes = 256 * 1024;

enum class CollKind { all_reduce, reduce, broadcast, reduce_scatter, all_gather };
const char* kind_name(CollKind kind);

// What a rank's collective is: compared across ranks at its first step.
struct Descriptor {
  std::uint64_t number = 0;  // collectives before it on this communicator
  int kind = 0;              // CollKind
  std::uint64_t count = 0;   // NCCL's own count argument (recvcount, sendcount)
  int dtype = 0;             // ncclDataType_t
  int op = -1;               // ncclRedOp_t, -1 where there is none
  int root = -1;             // -1 where there is none
  bool operator==(const Descriptor&) const = default;
};
std::string describe(const Descriptor& d);

struct Member {
  std::atomic<int> joined;
  int device;
  int pid;
  int world_rank;
  char host[160];  // host identity, as NCCL's duplicate check keys it
  char bus[32];
};

struct Slot {
  std::atomic<std::uint64_t> posted;    // the last step whose data is in this slot
  std::atomic<std::uint64_t> consumed;  // the last step this rank finished reading
  Descriptor descriptor;                // of the collective whose step is posted
};

struct Ring {
  std::atomic<std::uint64_t> head;  // bytes the sender has written
  std::atomic<std::uint64_t> tail;  // bytes the receiver has taken
};

struct Header {
  char magic[32];
  std::atomic<int> nranks;  // set by the first rank to join
  std::atomic<int> joined;
  std::atomic<std::uint32_t> doorbell;
  std::atomic<int> failed;  // a divergence was found: every rank's operations stop
  char failure[1024];
  Member members[kMaxRanks];
};

class Clique {
 public:
  // Maps the segment named by `id` for a communicator of `nranks`; null
  // with `error` set when it cannot.
  static Clique* open(const ncclUniqueId& id, int nranks, std::string* error);
  void close();  // one reference less; unmapped with the last

  Header& header() { return *header_; }
  int nranks() const { return nranks_; }
  const std::string& name() const { return name_; }
  Slot& slot(int rank);
  std::byte* slot_data(int rank);  // nranks * kChunkBytes
  Ring& ring(int from, int to);
  std::byte* ring_data(int from, int to);

  void ring_doorbell();
  // Sleeps until the doorbell moves past `seen` or `microseconds` pass.
  void wait_doorbell(std::uint32_t seen, long microseconds);

  // Records the first divergence; every member's operations stop.
  void fail(const std::string& why);
  bool failed() { return header_->failed.load() != 0; }
  std::string failure();

  // Operations of this process made on the segment and not yet gone: the
  // mapping outlives them even when every communicator closed it.
  void hold();
  void release();

 private:
  Header* header_ = nullptr;
  std::size_t bytes_ = 0;
  int nranks_ = 0;
  int references_ = 0;
  int operations_ = 0;
  std::string name_;
  std::size_t slot_stride_ = 0, ring_stride_ = 0;
};

// The segment name of a unique id (for messages).
std::string segment_name(const ncclUniqueId& id);
// A fresh unique id: a random token, this host and pid.
void make_unique_id(ncclUniqueId* id);
// This process's host identity as NCCL keys duplicate GPUs: $NCCL_HOSTID, else
// the hostname followed by the boot id.
std::string host_identity();

}  // namespace gpu_double::nccl
