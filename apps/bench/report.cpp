// Table layout. Columns and units are documented in docs/BENCHMARKING.md.
#include "report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>

namespace bench {
namespace {

void line(Output& out, const std::string& text) { out.write(text + '\n'); }

// A figure in a column of `width`, or '-' where there is none (a simulated
// device: the header and footer say why).
std::string figure(const std::optional<double>& v, int width, int decimals) {
  return v ? fmt::format("{:>{}.{}f}", *v, width, decimals) : fmt::format("{:>{}}", "-", width);
}

constexpr const char* kNoBandwidth = "simulated device: no bandwidth";

// How the form makes strata's call, for the header.
std::string form_description(const RunInfo& info) {
  if (info.form == "nonblocking") return "the i* call, then Request::wait, per call";
  if (info.form == "persistent") return "the *_init request bound once per size, then Request::start and wait per call";
  if (info.stream_ordered)
    return "the blocking call given a CUDA stream of the bench's (CommunicationOptions::stream), stream-ordered: it "
           "returns once enqueued";
  return "the blocking call";
}

}  // namespace

void print_header(Output& out, const RunInfo& info) {
  std::string hosts;
  for (const auto& [host, ranks] : info.hosts) hosts += fmt::format("{}{} ({} ranks)", hosts.empty() ? "" : ", ", host, ranks);
  line(out, fmt::format("# strata-bench {}: {}, {} ranks on {} node{}: {}", info.version, info.collective, info.ranks,
                        info.hosts.size(), info.hosts.size() == 1 ? "" : "s", hosts));
  line(out, fmt::format("# dtype {}  op {}  root {}  memory {}  {}{}  iters {}  warmup {}  check {}  timeout {}", info.dtype,
                        info.op, info.root < 0 ? "-" : fmt::format("{}", info.root), info.memory,
                        info.in_place ? "in-place" : "out-of-place",
                        info.offset != 0 ? fmt::format(" (buffers {} B past a page boundary)", info.offset) : "",
                        info.iters, info.warmup, info.check ? "on" : "off",
                        info.timeout_seconds > 0 ? fmt::format("{}s", info.timeout_seconds) : "none"));
  if (!info.devices.empty())
    line(out, fmt::format("# cuda devices by rank: {} (strata's assignment where it makes one, else local rank % "
                          "devices)",
                          fmt::join(info.devices, " ")));
  line(out, fmt::format("# algorithm spec: {} (the algorithm column says what ran per size{})", info.algorithm,
                        info.devices.empty() ? "" : "; for CUDA memory it repeats the spec"));
  if (!info.packing.empty()) line(out, fmt::format("# packing: {}", info.packing));
  line(out, fmt::format("# form {}: {}; progress thread {}", info.form, form_description(info),
                        info.progress_thread ? "on" : "off"));
  if (!info.model.empty())
    line(out, fmt::format("# model {}: {} gradient tensors, {} parameters ({})", info.model, info.model_tensors,
                          info.model_parameters, info.model_source));
  line(out, fmt::format("# time: median over iterations of the slowest rank, us; algbw = size / time; busbw = algbw x {}",
                        info.bus_factor_formula));
  if (info.simulated())
    line(out, fmt::format("# {}: the device is \"{}\", whose times are the simulator's, not a GPU's: algbw, busbw{} "
                          "show '-'",
                          kNoBandwidth, info.simulated_device,
                          info.baseline.empty() ? "" : fmt::format(", {} bus and ratio", info.baseline_short)));
  if (!info.baseline.empty())
    line(out, fmt::format("# baseline: {} on the same buffers in the same run; ratio = baseline time / strata time "
                          "(> 1: strata faster)",
                          info.baseline));
  if (info.stream_ordered)
    line(out, fmt::format("# stream-ordered: time = the call, then its stream waited for (events recorded before and "
                          "after the call); host = the call until it returns; device = cudaEventElapsedTime between "
                          "the events around the call on its stream{}",
                          info.baseline_short == "nccl" && !info.baseline.empty()
                              ? fmt::format("; {} is enqueued on a stream and timed the same way", info.baseline)
                              : ""));
  if (info.stream_overlap())
    line(out, "# overlap: comm = the stream-ordered call, its stream waited for; compute = strata::bench::busy_kernel "
              "(one block) on another stream of the device, set to about comm, waited for; both = the kernel "
              "launched, the call made, both streams waited for; overlap = 100 x (comm + compute - both) / min(comm, "
              "compute), within [0, 100]");
  else if (info.overlap)
    line(out, fmt::format("# overlap: pure = the blocking call; compute = {}; total = start, compute, wait; overlap = "
                          "max(0, 100 x (1 - (total - compute) / pure)), at most 100",
                          info.overlap_compute == "sleep" ? "a sleep of about pure (the core left free)"
                                                          : "a loop calibrated to about pure"));
  line(out, "#");
  std::string head1 = fmt::format("# {:>10} {:>11} {:>5} {:>5} {:>4} {:>12} {:>10} {:>8} {:>8} {:>6}", "size", "count", "type",
                                  "redop", "root", "algorithm", "time", "algbw", "busbw", "#wrong");
  std::string head2 = fmt::format("# {:>10} {:>11} {:>5} {:>5} {:>4} {:>12} {:>10} {:>8} {:>8} {:>6}", "(B)", "(elements)", "",
                                  "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (info.stream_ordered) {
    head1 += fmt::format(" {:>9} {:>9}", "host", "device");
    head2 += fmt::format(" {:>9} {:>9}", "(us)", "(us)");
  }
  if (!info.baseline.empty()) {
    head1 += fmt::format("  {:>10} {:>8} {:>6}", info.baseline_short + " time", info.baseline_short + " bus", "ratio");
    head2 += fmt::format("  {:>10} {:>8} {:>6}", "(us)", "(GB/s)", "");
    if (info.stream_ordered && info.baseline_short == "nccl") {
      head1 += fmt::format(" {:>9} {:>9}", "nccl host", "nccl dev");
      head2 += fmt::format(" {:>9} {:>9}", "(us)", "(us)");
    }
  }
  if (info.stream_overlap()) {
    head1 += fmt::format("  {:>10} {:>10} {:>10} {:>7}", "comm", "compute", "both", "overlap");
    head2 += fmt::format("  {:>10} {:>10} {:>10} {:>7}", "(us)", "(us)", "(us)", "(%)");
  } else if (info.overlap) {
    head1 += fmt::format("  {:>10} {:>10} {:>10} {:>7}", "pure", "compute", "total", "overlap");
    head2 += fmt::format("  {:>10} {:>10} {:>10} {:>7}", "(us)", "(us)", "(us)", "(%)");
  }
  line(out, head1);
  line(out, head2);
}

void print_row(Output& out, const RunInfo& info, const Row& row) {
  std::string text = fmt::format("  {:>10} {:>11} {:>5} {:>5} {:>4} {:>12} {:>10.2f} {} {} {:>6}", row.bytes, row.count,
                                 info.dtype, info.op, info.root, row.algorithm, row.time.median_us,
                                 figure(row.algbw, 8, 3), figure(row.busbw, 8, 3),
                                 row.wrong ? fmt::format("{}", *row.wrong) : "N/A");
  auto median = [](const std::optional<Timing>& t) {
    return t ? std::optional<double>(t->median_us) : std::nullopt;
  };
  if (info.stream_ordered)
    text += fmt::format(" {} {}", figure(median(row.host_time), 9, 2), figure(median(row.device_time), 9, 2));
  if (row.baseline_time) {
    text += fmt::format("  {:>10.2f} {} {}", row.baseline_time->median_us, figure(row.baseline_busbw, 8, 3),
                        figure(row.ratio(), 6, 2));
    if (info.stream_ordered && info.baseline_short == "nccl")
      text += fmt::format(" {} {}", figure(median(row.baseline_host_time), 9, 2),
                          figure(median(row.baseline_device_time), 9, 2));
  }
  if (row.overlap)
    text += fmt::format("  {:>10.2f} {:>10.2f} {:>10.2f} {}", row.overlap->pure.median_us,
                        row.overlap->compute.median_us, row.overlap->total.median_us,
                        figure(row.overlap->percent, 7, 1));
  line(out, text);
}

void print_footer(Output& out, const RunInfo& info, const std::vector<Row>& rows, const Summary& summary) {
  line(out, fmt::format("# Out of bounds values : {} {}", summary.wrong_total, summary.wrong_total ? "WRONG" : "OK"));
  if (info.simulated())
    line(out, fmt::format("# Avg bus bandwidth    : none ({}{})", kNoBandwidth,
                          info.baseline.empty() ? "" : fmt::format("; no ratio or overhead against {}", info.baseline)));
  if (summary.avg_busbw) line(out, fmt::format("# Avg bus bandwidth    : {:.4f} GB/s", *summary.avg_busbw));
  if (summary.avg_baseline_busbw)
    line(out, fmt::format("# Avg {} bus bandwidth: {:.4f} GB/s", info.baseline, *summary.avg_baseline_busbw));
  if (!rows.empty() && rows.back().ratio() && rows.back().busbw && rows.back().baseline_busbw)
    line(out, fmt::format("# At {} B: strata {:.3f} GB/s busbw, {} {:.3f} GB/s, ratio {:.2f}", rows.back().bytes,
                          *rows.back().busbw, info.baseline, *rows.back().baseline_busbw, *rows.back().ratio()));
  // What strata adds per call where latency dominates (the smallest size).
  if (!rows.empty() && rows.front().overhead_us())
    line(out, fmt::format("# overhead vs baseline : median {:+.2f} us per call at {} B (strata - {})",
                          *rows.front().overhead_us(), rows.front().bytes, info.baseline));
  // What a stream-ordered call costs the host where latency dominates; not
  // on a simulated device, whose host costs are the simulator's.
  if (!rows.empty() && rows.front().host_time && !info.simulated()) {
    const Row& r = rows.front();
    line(out, fmt::format("# host cost per call  : median {:.2f} us at {} B (the stream-ordered call until it "
                          "returns{})",
                          r.host_time->median_us, r.bytes,
                          r.baseline_host_time ? fmt::format("; {} {:.2f} us", info.baseline, r.baseline_host_time->median_us)
                                               : ""));
  }
  if (!rows.empty() && rows.front().host_overhead_us())
    line(out, fmt::format("# host overhead vs baseline: median {:+.2f} us per call at {} B (strata - {}, each until "
                          "it returns)",
                          *rows.front().host_overhead_us(), rows.front().bytes, info.baseline));
  // Where a call is longest, so where a progress thread (or the GPU) has most to hide.
  if (!rows.empty() && rows.back().overlap && rows.back().overlap->percent) {
    const bool gpu = info.stream_overlap();
    line(out, fmt::format("# overlap at {} B: {:.1f}% ({} {:.2f} us, compute {:.2f} us, {} {:.2f} us)",
                          rows.back().bytes, *rows.back().overlap->percent, gpu ? "comm" : "pure",
                          rows.back().overlap->pure.median_us, rows.back().overlap->compute.median_us,
                          gpu ? "both" : "total", rows.back().overlap->total.median_us));
  }
  if (summary.memcpy_gbps)
    line(out, fmt::format("# memcpy reference     : {:.3f} GB/s (one core, {} B copied, rank 0)", *summary.memcpy_gbps,
                          summary.memcpy_bytes));
  const int device = info.devices.empty() ? -1 : info.devices.front();
  if (summary.device_copy && !(summary.d2h_gbps && summary.h2d_gbps))
    line(out, fmt::format("# D2H/H2D copy reference: none ({}; the copies ran: device {} <-> pinned host, {} B, rank 0)",
                          kNoBandwidth, device, summary.memcpy_bytes));
  if (summary.d2h_gbps && summary.h2d_gbps) {
    line(out, fmt::format("# D2H copy reference   : {:.3f} GB/s (cudaMemcpy device {} -> pinned host, {} B, rank 0)",
                          *summary.d2h_gbps, device, summary.memcpy_bytes));
    line(out, fmt::format("# H2D copy reference   : {:.3f} GB/s (cudaMemcpy pinned host -> device {}, {} B, rank 0)",
                          *summary.h2d_gbps, device, summary.memcpy_bytes));
    if (auto f = staged_fraction(rows, summary))
      line(out, fmt::format("# At {} B: strata algbw {:.3f} GB/s = {:.1f}% of the slower copy direction (the bound "
                            "for host-staged algorithms)",
                            rows.back().bytes, *rows.back().algbw, 100 * *f));
  }
  line(out, "#");
}

}  // namespace bench
