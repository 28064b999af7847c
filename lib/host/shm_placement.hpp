// How near each other the two ranks of a node sit, measured: the round trip
// of one cache line between them, through the node's shared-memory
// segment, when the segment is made and again every kRecheckEveryCalls
// calls (nodes of more ranks take the rounds without measuring:
// shm_direct.hpp, kMostLocalRanks).
//
// Why it decides a path: the shared-memory rounds (shm_rounds.hpp) move
// every byte through a peer's cache twice (one copy in, one copy out); the
// direct path (shm_direct.hpp) copies once, through the kernel. Where a
// cache line crosses between the two cores quickly (they share a cache),
// the rounds' copies cost little and they win; where it crosses slowly
// (another core complex or socket), the direct reads win. On the AMD EPYC
// VM of 2026-11-28 the host placed the two vCPUs either way from run to
// run: line round trips of 54-136 ns in one placement, 328-655 ns in the
// other. 2 ranks, f32, 64 KiB-4 MiB, each path forced, against MPI's own
// collective in the same run (docs/ALGORITHMS.md, "Near and far ranks"):
// near, the rounds ran all-reduce 1.96-2.45x, reduce 1.59-3.12x and
// broadcast 1.41-2.61x MPI's speed, the direct reads 1.21-1.37x,
// 0.92-0.95x and 0.76-1.02x; far, the rounds ran broadcast 0.39-0.72x and
// reduce 0.55-0.73x (up to 2 MiB), the direct reads broadcast 0.79-1.04x.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>

namespace strata::host {
class Transport;
}

namespace strata::host::shm {

enum class Placement {
  unmeasured,  // not measured: one rank, the direct path off or forced, or STRATA_SHM_PLACEMENT set
  near,        // every measured round trip at most kNearRoundTripNs
  far,         // some round trip longer, or a peer that did not answer in time
};

// A round trip at most this long means near (between the two clusters
// measured above).
constexpr double kNearRoundTripNs = 220;

// What STRATA_SHM_PLACEMENT asks for (read once per process): "near" or
// "far" take that verdict without measuring; unset or "auto" measures, and
// so does anything else, with a warning.
Placement placement_from_environment();

struct PlacementVerdict {
  Placement placement = Placement::unmeasured;
  double round_trip_ns = 0;  // as measured (0 when not measured or not answered)
  int farthest = -1;         // the local rank it was measured with (-1: none)
};

// Collective over `node_comm`, a node of two ranks (`local_rank` 0 or 1):
// local rank 0 times line round trips with local rank 1 through `lines`
// (lines[r]: written only by local rank r, in memory both map), decides,
// and both return its verdict. It takes well under a millisecond; a peer
// that does not answer within 50 ms makes the verdict far, never a hang.
// Logs the verdict once per process at INFO.
PlacementVerdict measure_placement(MPI_Comm node_comm, int local_rank,
                                   std::span<std::atomic<std::uint64_t>* const, 2> lines);

// The verdict of the last measurement in this process (tests and
// diagnostics): unmeasured before any.
PlacementVerdict last_measured_placement();

// The placement is measured again every this many calls of a communicator
// (the first call that could take the direct path once the call number
// reaches each multiple). Why: on the AMD EPYC VM the host moved the two
// vCPUs between near and far within seconds (44 of 72 one-second runs near,
// the others far; docs/ALGORITHMS.md, "Near and far ranks", has today's
// figures), and a verdict that no longer holds costs up to 2x (a 1 MiB
// reduce at 0.45x MPI's speed on a stale "near", 1.77x on a fresh one, when
// the recheck was added). A recheck takes about 30 line round trips (10-20
// us); every 4096 calls of at least 16 KiB (each a few microseconds or
// more), that is well under 1% of the calls' time.
constexpr std::uint64_t kRecheckEveryCalls = 4096;
// ... or sooner, once the calls that could read directly moved this many
// bytes since the last recheck: 4096 calls of 4 MiB take seconds, and the
// large calls are the ones a stale verdict costs most. 64 MiB take 3-10 ms
// here, so a recheck adds 0.1-0.7% to them.
constexpr std::uint64_t kRecheckEveryBytes = std::uint64_t{64} << 20;

// What a recheck reads and writes: each local rank's probe line (written
// only by that rank) and local rank 0's verdict word, in memory both map.
struct RecheckLines {
  std::atomic<std::uint64_t>* probe[2];
  std::atomic<std::uint64_t>* verdict;  // written only by local rank 0
};

// Both local ranks of a node of two call it right after the same
// successful call number `epoch` (>= 1): local rank 0 times line round
// trips with local rank 1, decides, and publishes the verdict in its
// verdict word; local rank 1 echoes and adopts it. Returns the new verdict
// on both ranks, or nullopt on both: keep the current one (a peer that did
// not take part within a few milliseconds, as after a call it left by an
// exception). Local rank 1, once it echoed every exchange, waits for the
// verdict word as any wait of the call does (`t`'s deadline: a rank that
// stops there is named by DeadlineExceeded). No MPI; logs a changed
// verdict (INFO the first time in the process, TRACE after).
std::optional<PlacementVerdict> recheck_placement(Transport& t, int local_rank, const RecheckLines& lines,
                                                  std::uint64_t epoch, Placement current);

// Tests only: recheck every `every_calls` calls instead of
// kRecheckEveryCalls, and, when `rule` is set, let it give local rank 0's
// verdict from the round trip and the epoch (0 and null: the defaults).
using PlacementRule = Placement (*)(double round_trip_ns, std::uint64_t epoch);
void set_recheck_for_testing(std::uint64_t every_calls, PlacementRule rule);
std::uint64_t recheck_every_calls();

}  // namespace strata::host::shm
