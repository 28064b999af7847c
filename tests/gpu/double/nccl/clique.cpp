#include "clique.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>

namespace gpu_double::nccl {
namespace {

constexpr char kMagic[] = "strata-double-nccl-id";

std::size_t round64(std::size_t n) { return (n + 63) / 64 * 64; }

struct Open {
  std::mutex mutex;
  std::map<std::string, Clique*> by_name;
};
Open& open_cliques() {
  static Open& o = *new Open;
  return o;
}

}  // namespace

const char* kind_name(CollKind kind) {
  switch (kind) {
    case CollKind::all_reduce: return "ncclAllReduce";
    case CollKind::reduce: return "ncclReduce";
    case CollKind::broadcast: return "ncclBroadcast";
    case CollKind::reduce_scatter: return "ncclReduceScatter";
    case CollKind::all_gather: return "ncclAllGather";
  }
  return "?";
}

std::string describe(const Descriptor& d) {
  std::string text = fmt::format("collective #{} {}(count {}, datatype {}", d.number, kind_name(CollKind(d.kind)),
                                 d.count, d.dtype);
  if (d.op >= 0) text += fmt::format(", op {}", d.op);
  if (d.root >= 0) text += fmt::format(", root {}", d.root);
  return text + ")";
}

std::string segment_name(const ncclUniqueId& id) {
  std::string hex;
  for (int i = 32; i < 48; ++i) hex += fmt::format("{:02x}", static_cast<unsigned char>(id.internal[i]));
  return "/strata-double-nccl-" + hex;
}

void make_unique_id(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, kMagic, sizeof kMagic);
  std::random_device random;
  for (int i = 32; i < 48; i += 4) {
    const unsigned v = random();
    std::memcpy(id->internal + i, &v, 4);
  }
  const int pid = ::getpid();
  std::memcpy(id->internal + 48, &pid, sizeof pid);
}

std::string host_identity() {
  if (const char* id = std::getenv("NCCL_HOSTID"); id && *id) return id;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string identity = name;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string token;
  if (boot >> token) identity += token;
  return identity;
}

Clique* Clique::open(const ncclUniqueId& id, int nranks, std::string* error) {
  if (std::memcmp(id.internal, kMagic, sizeof kMagic) != 0) {
    *error = "the unique id was not made by ncclGetUniqueId (wrong bytes: was it broadcast to every rank?)";
    return nullptr;
  }
  if (nranks < 1 || nranks > kMaxRanks) {
    *error = fmt::format("nranks = {} (the test double serves 1 to {})", nranks, kMaxRanks);
    return nullptr;
  }
  const std::string name = segment_name(id);
  Open& all = open_cliques();
  std::lock_guard lock(all.mutex);
  if (Clique* c = all.by_name[name]) {
    ++c->references_;
    return c;
  }
  auto* c = new Clique;
  c->name_ = name;
  c->nranks_ = nranks;
  c->slot_stride_ = round64(sizeof(Slot)) + std::size_t(nranks) * kChunkBytes;
  c->ring_stride_ = round64(sizeof(Ring)) + kRingBytes;
  c->bytes_ = round64(sizeof(Header)) + std::size_t(nranks) * c->slot_stride_ +
              std::size_t(nranks) * std::size_t(nranks) * c->ring_stride_;
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    *error = fmt::format("shm_open({}) failed: {}", name, std::strerror(errno));
    delete c;
    return nullptr;
  }
  struct stat st {};
  ::fstat(fd, &st);
  if (std::size_t(st.st_size) < c->bytes_ && ::ftruncate(fd, off_t(c->bytes_)) != 0) {
    *error = fmt::format("ftruncate({}) failed: {}", name, std::strerror(errno));
    ::close(fd);
    delete c;
    return nullptr;
  }
  void* at = ::mmap(nullptr, c->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    *error = fmt::format("mmap({}) failed: {}", name, std::strerror(errno));
    delete c;
    return nullptr;
  }
  c->header_ = static_cast<Header*>(at);  // a new segment is all zeros: every atomic starts at 0
  c->references_ = 1;
  all.by_name[name] = c;
  return c;
}

void Clique::close() {
  Open& all = open_cliques();
  std::lock_guard lock(all.mutex);
  if (--references_ > 0) return;
  all.by_name.erase(name_);
  ::shm_unlink(name_.c_str());  // harmless when a peer unlinked it first
  // Operations of an aborted communicator may still be leaving: then the
  // last of them unmaps (the object itself is never deleted).
  if (operations_ == 0) ::munmap(header_, bytes_);
}

void Clique::hold() {
  std::lock_guard lock(open_cliques().mutex);
  ++operations_;
}

void Clique::release() {
  std::lock_guard lock(open_cliques().mutex);
  if (--operations_ == 0 && references_ == 0) ::munmap(header_, bytes_);
}

Slot& Clique::slot(int rank) {
  return *reinterpret_cast<Slot*>(reinterpret_cast<std::byte*>(header_) + round64(sizeof(Header)) +
                                  std::size_t(rank) * slot_stride_);
}

std::byte* Clique::slot_data(int rank) { return reinterpret_cast<std::byte*>(&slot(rank)) + round64(sizeof(Slot)); }

Ring& Clique::ring(int from, int to) {
  return *reinterpret_cast<Ring*>(reinterpret_cast<std::byte*>(header_) + round64(sizeof(Header)) +
                                  std::size_t(nranks_) * slot_stride_ +
                                  (std::size_t(from) * std::size_t(nranks_) + std::size_t(to)) * ring_stride_);
}

std::byte* Clique::ring_data(int from, int to) {
  return reinterpret_cast<std::byte*>(&ring(from, to)) + round64(sizeof(Ring));
}

void Clique::ring_doorbell() {
  header_->doorbell.fetch_add(1);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&header_->doorbell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void Clique::wait_doorbell(std::uint32_t seen, long microseconds) {
  const timespec limit{microseconds / 1000000, (microseconds % 1000000) * 1000};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&header_->doorbell), FUTEX_WAIT, seen, &limit, nullptr, 0);
}

void Clique::fail(const std::string& why) {
  int expected = 0;
  if (header_->failed.compare_exchange_strong(expected, 2)) {  // 2: claimed, text being written
    std::snprintf(header_->failure, sizeof header_->failure, "%s", why.c_str());
    header_->failed.store(1);
  }
  ring_doorbell();
}

std::string Clique::failure() {
  // The rank that claimed the report writes a bounded text and publishes
  // it at once; one that died in between must not hang its peers.
  for (int waited_ms = 0; header_->failed.load() == 2; ++waited_ms) {
    if (waited_ms >= 5000) return "a rank began reporting a failure and never finished (did it die?)";
    ::usleep(1000);
  }
  return header_->failure;
}

}  // namespace gpu_double::nccl
