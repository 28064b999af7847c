#include "host/shm_segment.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "host/cma.hpp"
#include "host/shm_direct.hpp"
#include "util/check.hpp"
#include "util/log.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::host {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "cross-process atomics need lock-free counters");

namespace {

constexpr std::size_t kAlign = 4096;
std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Agree across the node whether every rank succeeded; throw on all if not.
void agree(bool ok, const std::string& what, MPI_Comm comm) {
  int all_ok = ok ? 1 : 0;
  STRATA_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (!all_ok)
    throw BackendError(fmt::format("strata [{}]: shared-memory segment: {}", util::where(),
                                   what.empty() ? "another rank of this node failed" : what),
                       "shm", 0, util::hostname(), util::world_rank());
}

// Collective over node_comm: whether its `local_size` ranks outnumber the
// CPUs any of them may run on (the union of their affinity masks). A rank
// whose mask cannot be read counts every online CPU.
bool outnumber_their_cpus(MPI_Comm node_comm, int local_size) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < online && cpu < CPU_SETSIZE; ++cpu) CPU_SET(static_cast<int>(cpu), &mine);
  }
  std::vector<cpu_set_t> all(static_cast<std::size_t>(local_size));
  STRATA_CHECK_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node_comm));
  cpu_set_t any;
  CPU_ZERO(&any);
  for (cpu_set_t& set : all) CPU_OR(&any, &any, &set);
  return local_size > CPU_COUNT(&any);
}

}  // namespace

ShmSegment::ShmSegment(MPI_Comm node_comm, std::size_t set_bytes) {
  STRATA_CHECK_MPI(MPI_Comm_rank(node_comm, &local_rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(node_comm, &local_size_));
  set_bytes_ = round_up(set_bytes, kAlign);
  stride_ = kControlBytes + 2 * set_bytes_;
  mapped_bytes_ = stride_ * static_cast<std::size_t>(local_size_);

  std::array<char, 64> name{};
  std::string error;
  int fd = -1;
  if (local_rank_ == 0) {
    std::random_device random;
    fmt::format_to_n(name.data(), name.size() - 1, "/strata-{}-{:08x}", getpid(), random());
    fd = shm_open(name.data(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(mapped_bytes_)) != 0)
      error = fmt::format("cannot create {} ({} bytes): {}; is /dev/shm large enough?", name.data(), mapped_bytes_,
                          std::strerror(errno));
  }
  STRATA_CHECK_MPI(MPI_Bcast(name.data(), static_cast<int>(name.size()), MPI_CHAR, 0, node_comm));
  agree(error.empty(), error, node_comm);
  if (local_rank_ != 0) {
    fd = shm_open(name.data(), O_RDWR, 0600);
    if (fd < 0) error = fmt::format("cannot open {}: {}", name.data(), std::strerror(errno));
  }
  if (fd >= 0) {
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) error = fmt::format("cannot map {} bytes: {}", mapped_bytes_, std::strerror(errno));
    else base_ = static_cast<std::byte*>(p);
    close(fd);
  }
  // Everyone has it mapped (or failed): remove the name either way.
  const bool ok = error.empty();
  int all_ok = ok ? 1 : 0;
  const int agreed = MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, node_comm);
  if (local_rank_ == 0) shm_unlink(name.data());
  if (agreed != MPI_SUCCESS || !all_ok) {
    if (base_) munmap(base_, mapped_bytes_);
    base_ = nullptr;
    if (agreed != MPI_SUCCESS)
      util::throw_mpi_error(agreed, "MPI_Allreduce(the node's mapping outcomes)", __FILE__, __LINE__);
    throw BackendError(fmt::format("strata [{}]: shared-memory segment: {}", util::where(),
                                   error.empty() ? "another rank of this node could not map it" : error),
                       "shm", 0, util::hostname(), util::world_rank());
  }
  crowded_ = outnumber_their_cpus(node_comm, local_size_);
  detect_direct(node_comm);
}

void ShmSegment::detect_direct(MPI_Comm node_comm) {
  // Publish who I am, let peers read me, and once everyone has, read each
  // peer's identity line through its own address: the bytes must come back
  // as the peer wrote them into the segment.
  Identity& me = control(local_rank_).identity;
  me.pid = getpid();
  me.self = reinterpret_cast<std::uintptr_t>(&me);
  me.left.store(0, std::memory_order_relaxed);
  const cma::Mode mode = cma::mode_from_environment();
  const bool wanted = mode == cma::Mode::forced || (mode == cma::Mode::automatic && !crowded());
  if (wanted) cma::allow_peers();
  STRATA_CHECK_MPI(MPI_Barrier(node_comm));
  int error = wanted ? 0 : mode == cma::Mode::off ? cma::kTurnedOff : cma::kCrowded, failed_peer = -1;
  for (int r = 0; r < local_size_ && error == 0; ++r) {
    if (r == local_rank_) continue;
    const Identity& peer = control(r).identity;
    struct {
      std::int64_t pid;
      std::uint64_t self;
    } read_back{};
    error = cma::try_read(static_cast<pid_t>(peer.pid), reinterpret_cast<const void*>(peer.self), &read_back,
                          sizeof read_back);
    if (error == 0 && (read_back.pid != peer.pid || read_back.self != peer.self)) error = cma::kWrongBytes;
    if (error != 0) failed_peer = r;
  }
  direct_ = readable_ = cma::agree(node_comm, error, failed_peer);
  if (!direct_ || local_size_ < 2) return;
  if (mode != cma::Mode::forced && local_size_ > shm::direct::kMostLocalRanks) {
    direct_ = false;
    static std::once_flag logged;
    std::call_once(logged, [&] {
      util::log(util::LogLevel::info,
                "{} local ranks: the shared-memory rounds carry every size (the direct reads pay only between {} "
                "ranks; STRATA_CMA=1 reads directly anyway)",
                local_size_, shm::direct::kMostLocalRanks);
    });
    return;
  }
  choose_direct_sizes(node_comm);
  if (mode == cma::Mode::forced) return;
  placement_ = shm::placement_from_environment();
  if (placement_ == shm::Placement::unmeasured) {
    std::atomic<std::uint64_t>* const lines[2] = {&control(0).placement_probe, &control(1).placement_probe};
    placement_ = shm::measure_placement(node_comm, local_rank_, lines).placement;
    watched_ = true;
    next_recheck_ = shm::recheck_every_calls();
  }
  direct_ = placement_ != shm::Placement::near;
}

void ShmSegment::choose_direct_sizes(MPI_Comm node_comm) {
  // Local rank 1's control page at its own address: its identity line's
  // address there, less the line's offset in the page (the same in every
  // mapping).
  const Identity& peer = control(1).identity;
  const std::ptrdiff_t offset = reinterpret_cast<const std::byte*>(&peer) - reinterpret_cast<const std::byte*>(&control(1));
  const auto* remote = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(peer.self)) - offset;
  direct_sizes_ = shm::direct::sizes_for(
      shm::direct::measure_read_cost(node_comm, local_rank_, static_cast<pid_t>(peer.pid), remote).cost);
}

void ShmSegment::rechecked(std::uint64_t sequence, std::optional<shm::Placement> verdict) {
  const std::uint64_t every = shm::recheck_every_calls();
  next_recheck_ = (sequence / every + 1) * every;
  bytes_since_recheck_ = 0;
  if (!verdict) return;
  placement_ = *verdict;
  direct_ = placement_ != shm::Placement::near;
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, mapped_bytes_);
}

}  // namespace strata::host
