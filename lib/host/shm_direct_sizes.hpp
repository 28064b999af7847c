// From which message size each shared-memory collective reads its peers'
// buffers directly (shm_direct.hpp) instead of passing every byte through
// the shared sets (shm_rounds.hpp), and how a node finds out which sizes
// suit it: by timing a cross-memory read when its segment is made.
//
// Why measured: the direct path pays a system call and a page walk per
// read, and what those cost depends on the machine far more than the
// rounds' copies do. 2 ranks far apart, f32 sum, both paths against MPI's
// own collective in the same runs (docs/ALGORITHMS.md, "Where the direct
// path starts"):
//  - AMD EPYC VM (1 MiB L2), 2026-11-27: a direct 4 KiB reduce took
//    3.65-4.41 us, of which the read 2.5-4 us; the rounds 1.0-1.9 us. They
//    won below 32 KiB (reduce) and 16 KiB (broadcast), close or far.
//  - Intel Xeon VM (2 MiB L2), 2026-11-29: a 4 KiB read 0.5-1.1 us
//    (scripts/profile/cma_read.c). The direct reads won from 16 KiB
//    (reduce), 8 KiB (broadcast) and 32 KiB (all-reduce; 64 KiB when first
//    measured there, with one run per path).
// Large messages: from 1 MiB on, a reduce's large reads ran at about 7
// GB/s while the rounds' cache-sized blocks pipeline, so reduce goes back
// to the rounds above 512 KiB on both. Broadcast does so above 1 MiB where
// reads are cheap (the Intel VM, 2026-11-29: 2-4 MiB in 0.74-0.89x the
// direct reads' time in strata-bench and OSU, "The direct path starts
// where a read is cheap"), and never where they are dear (the AMD VM, far
// apart, 1-4 MiB: the direct reads 0.80-1.01x MPI's speed, the rounds
// 0.58-0.83x, "Near and far ranks"). One machine of each kind was
// measured; a third may differ, and STRATA_CMA_READS picks either set.
// All-gather (the AMD VM, far apart, reads cheap, 2026-12-02, OSU
// osu_allgather, 3-5 alternating runs): the direct reads took 0.88x the
// rounds' time at 8 KiB blocks, 0.65x at 16 KiB, 0.49-0.55x at 64-256 KiB
// and 0.78-0.81x at 1-8 MiB, and 1.12x at 4 KiB; the dear sizes start it
// one step later, as for reduce.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace strata::host::shm::direct {

// The sizes (bytes, inclusive) of one collective that read directly.
struct Range {
  std::size_t from = SIZE_MAX;
  std::size_t up_to = SIZE_MAX;
  bool holds(std::size_t bytes) const { return bytes >= from && bytes <= up_to; }
};

// Each collective's range.
struct Sizes {
  Range all_reduce, reduce, broadcast, all_gather;  // all_gather: the bytes of one rank's block
};
inline constexpr Sizes kDearReads{{64 * 1024}, {32 * 1024, 512 * 1024}, {16 * 1024}, {16 * 1024}};
inline constexpr Sizes kCheapReads{{32 * 1024}, {16 * 1024, 512 * 1024}, {8 * 1024, 1024 * 1024}, {8 * 1024}};

// What a cross-memory read costs on a node.
enum class ReadCost {
  unmeasured,  // not measured (yet): the dear sizes apply
  cheap,       // a read of kProbeBytes took at most kCheapReadNs
  dear,        // longer, or a read failed
};

// The probe: the fastest of kProbeReads reads of kProbeBytes (after
// kProbeWarmup), so that an interruption only ever makes it slower. Cheap
// means at most kCheapReadNs: between the two VMs above (0.5-1.1 us and
// 2.5-4 us).
constexpr std::size_t kProbeBytes = 4096;
constexpr int kProbeWarmup = 4, kProbeReads = 16;
constexpr double kCheapReadNs = 1500;

// The sizes for a verdict: kCheapReads for cheap, else kDearReads.
const Sizes& sizes_for(ReadCost cost);

// The verdict for a probe's time in ns: cheap when in (0, kCheapReadNs],
// dear otherwise (< 0: a read failed; 0: nothing was timed).
ReadCost read_cost_for(double read_ns);

// What STRATA_CMA_READS asks for (read once per process): "cheap" or "dear"
// take that verdict without measuring; unset or "auto" measures, and so
// does anything else, with a warning.
ReadCost read_cost_from_environment();

struct ReadVerdict {
  ReadCost cost = ReadCost::unmeasured;
  double read_ns = 0;  // the probe's time (0: not measured; < 0: a read failed)
};

// Collective over `node_comm` (at least two ranks, every one able to read
// every other: ShmSegment's detection said so): local rank 0 times reads
// of kProbeBytes at `remote` in local rank 1's process `peer_pid` (memory
// that stays mapped there until the call returns), decides, and every rank
// returns its verdict; STRATA_CMA_READS, when it names one, is taken
// instead, without reading. Logs the verdict once per process at INFO.
// Takes a few tens of microseconds.
ReadVerdict measure_read_cost(MPI_Comm node_comm, int local_rank, pid_t peer_pid, const void* remote);

// The verdict of the last measure_read_cost in this process (tests and
// diagnostics): unmeasured before any.
ReadVerdict last_read_verdict();

}  // namespace strata::host::shm::direct
