// What one run measured, as plain values: the header facts, one Row per
// size, the summary. report.cpp prints them, results.cpp writes JSON / CSV.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "timing.hpp"

namespace bench {

struct RunInfo {
  std::string version;
  std::string collective;
  std::string baseline;            // "" or the call timed ("MPI_Allreduce", "ncclAllReduce")
  std::string baseline_short = "mpi";  // column heads: "mpi" or "nccl"
  std::string bus_factor_formula;  // "2(n-1)/n" or "1"
  double bus_factor = 1;
  int ranks = 0;
  std::vector<std::pair<std::string, int>> hosts;  // host name, ranks on it
  std::string dtype, op, memory = "host", algorithm;
  std::vector<int> devices;  // --memory cuda: every rank's CUDA device, by rank
  // --memory cuda on a simulated device (the test double): its name, else
  // "". Times are then the simulator's, so no bandwidth, ratio, overhead or
  // copy figure is derived from them.
  std::string simulated_device;
  bool simulated() const { return !simulated_device.empty(); }
  int root = -1;  // -1 when the collective has none
  bool in_place = false;
  std::size_t offset = 0;  // --offset: host buffers' bytes past a page boundary
  bool check = true;
  int iters = 0, warmup = 0;
  double timeout_seconds = 0;
  std::string packing;  // batch: "automatic", "bytes_per_pack=B" or "num_packs=N"
  std::string form = "blocking";  // --form: blocking, nonblocking or persistent
  // Config::progress_thread as the communicator got it: --progress-thread
  // or STRATA_PROGRESS_THREAD=1.
  bool progress_thread = false;
  // --stream-ordered: strata's calls get a stream and return once enqueued;
  // rows have host and device times.
  bool stream_ordered = false;
  bool overlap = false;  // --overlap: every row has one
  // --overlap: "spin" or "sleep" (a started form's host computation), or
  // "busy_kernel" (--stream-ordered: strata::bench::busy_kernel).
  std::string overlap_compute;
  bool stream_overlap() const { return overlap && overlap_compute == "busy_kernel"; }
  // --collective batch only.
  std::string model, model_source;
  std::size_t model_tensors = 0, model_parameters = 0;
};

// --overlap's figures for one size (overlap.hpp says how they are
// measured). With --stream-ordered, `pure` is T_comm and `total` T_both.
struct Overlap {
  Timing pure;     // the blocking call (stream-ordered: the call, then its stream waited for)
  Timing compute;  // the computation alone (stream-ordered: the busy kernel, waited for)
  Timing total;    // start, computation, wait (stream-ordered: kernel, call, both waited for)
  // The method's formula (overlap.hpp), in [0, 100]; nullopt on a
  // simulated device (its times say nothing about overlap on a GPU).
  std::optional<double> percent;
};

struct Row {
  std::size_t bytes = 0, count = 0, tensors = 1;
  std::string algorithm;  // what strata ran for this size
  bool simulated = false;  // timed on a simulated device: no speed figure below
  // The call's time (stream-ordered: until its stream has drained; see
  // stream_timing.hpp).
  Timing time;
  // --stream-ordered: the call until it returns, and the device's time
  // between events around it on its stream.
  std::optional<Timing> host_time, device_time;
  // GB/s (1e9 bytes/s); nullopt on a simulated device (fill_bandwidths).
  std::optional<double> algbw, busbw;
  std::optional<std::size_t> wrong;  // nullopt when --check 0
  std::optional<Timing> baseline_time;
  // --stream-ordered with --baseline nccl: the NCCL calls enqueued on a
  // stream, timed as strata's are.
  std::optional<Timing> baseline_host_time, baseline_device_time;
  std::optional<double> baseline_algbw, baseline_busbw;
  std::optional<Overlap> overlap;  // --overlap only

  // Baseline time / strata time: above 1 means strata is faster. nullopt
  // without a baseline or on a simulated device.
  std::optional<double> ratio() const;
  // strata's median time minus the baseline's, us: what strata adds per
  // call over the raw call (negative: strata is faster). nullopt without a
  // baseline or on a simulated device.
  std::optional<double> overhead_us() const;
  // The same for the host time and the device time (--stream-ordered with
  // --baseline nccl): what strata's call costs the host, and the device,
  // beyond the raw call's. nullopt without both or on a simulated device.
  std::optional<double> host_overhead_us() const;
  std::optional<double> device_overhead_us() const;
};

struct Summary {
  std::optional<double> avg_busbw;  // nullopt without rows or on a simulated device
  std::optional<double> avg_baseline_busbw;
  std::size_t wrong_total = 0;
  // --memcpy-reference, at the largest size (`memcpy_bytes`): host memory
  // gets the single-core memcpy, CUDA memory the pinned copies
  // (`device_copy`; their figures stay nullopt on a simulated device).
  std::optional<double> memcpy_gbps;
  bool device_copy = false;
  std::optional<double> d2h_gbps, h2d_gbps;
  std::size_t memcpy_bytes = 0;
};

// The largest row's algbw as a fraction of the slower pinned copy direction:
// a host-staged algorithm copies every byte down and up, so even a perfect
// pipeline cannot beat that direction. nullopt without the copy reference.
std::optional<double> staged_fraction(const std::vector<Row>& rows, const Summary& summary);

// algbw = bytes / time; busbw = algbw * the collective's factor; the same
// for the baseline. Leaves them nullopt when `row.simulated`.
void fill_bandwidths(Row& row, double bus_factor);
Summary summarise(const std::vector<Row>& rows);

// The -J and --csv files' contents (main writes them through an Output,
// which reports a failed write).
std::string json_text(const RunInfo& info, const std::vector<Row>& rows, const Summary& summary);
std::string csv_text(const RunInfo& info, const std::vector<Row>& rows);

}  // namespace bench
