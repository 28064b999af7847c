// Bandwidth arithmetic and the machine-readable outputs (JSON for
// scripts/plot_bench.py, CSV for spreadsheets).
#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace bench {

// A simulator's times say nothing about a GPU's speed, so nothing that
// compares speeds is derived from them.
std::optional<double> Row::ratio() const {
  if (simulated || !baseline_time || time.median_us <= 0) return std::nullopt;
  return baseline_time->median_us / time.median_us;
}

std::optional<double> Row::overhead_us() const {
  if (simulated || !baseline_time) return std::nullopt;
  return time.median_us - baseline_time->median_us;
}

std::optional<double> Row::host_overhead_us() const {
  if (simulated || !host_time || !baseline_host_time) return std::nullopt;
  return host_time->median_us - baseline_host_time->median_us;
}

std::optional<double> Row::device_overhead_us() const {
  if (simulated || !device_time || !baseline_device_time) return std::nullopt;
  return device_time->median_us - baseline_device_time->median_us;
}

std::optional<double> staged_fraction(const std::vector<Row>& rows, const Summary& summary) {
  if (rows.empty() || !rows.back().algbw || !summary.d2h_gbps || !summary.h2d_gbps) return std::nullopt;
  const double slower = std::min(*summary.d2h_gbps, *summary.h2d_gbps);
  if (slower <= 0) return std::nullopt;
  return *rows.back().algbw / slower;
}

void fill_bandwidths(Row& row, double bus_factor) {
  if (row.simulated) return;
  // bytes per microsecond = 1e6 B/s; / 1e3 gives GB/s (1e9), as nccl-tests.
  auto gbps = [&](double us) { return us > 0 ? static_cast<double>(row.bytes) / us / 1e3 : 0.0; };
  row.algbw = gbps(row.time.median_us);
  row.busbw = *row.algbw * bus_factor;
  if (row.baseline_time) {
    row.baseline_algbw = gbps(row.baseline_time->median_us);
    row.baseline_busbw = *row.baseline_algbw * bus_factor;
  }
}

Summary summarise(const std::vector<Row>& rows) {
  Summary s;
  double busbw = 0, baseline = 0;
  bool all_busbw = !rows.empty(), all_baseline = !rows.empty();
  for (const auto& r : rows) {
    if (r.busbw) busbw += *r.busbw;
    else all_busbw = false;
    if (r.baseline_busbw) baseline += *r.baseline_busbw;
    else all_baseline = false;
    s.wrong_total += r.wrong.value_or(0);
  }
  if (all_busbw) s.avg_busbw = busbw / static_cast<double>(rows.size());
  if (all_baseline) s.avg_baseline_busbw = baseline / static_cast<double>(rows.size());
  return s;
}

namespace {

nlohmann::json timing_json(const Timing& t) {
  return {{"median_us", t.median_us}, {"min_us", t.min_us}, {"max_us", t.max_us}};
}

// A figure, or null where there is none (a simulated device).
nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// The CSV's empty field where there is no figure.
std::string csv_number(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "";
}

}  // namespace

std::string json_text(const RunInfo& info, const std::vector<Row>& rows, const Summary& summary) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& [host, ranks] : info.hosts) hosts.push_back({{"host", host}, {"ranks", ranks}});
  nlohmann::json j = {
      {"tool", "strata-bench"},
      {"version", info.version},
      {"collective", info.collective},
      {"ranks", info.ranks},
      {"nodes", info.hosts.size()},
      {"hosts", hosts},
      {"dtype", info.dtype},
      {"op", info.op},
      {"root", info.root},
      {"in_place", info.in_place},
      {"offset", info.offset},
      {"memory", info.memory},
      {"devices", info.devices},
      {"simulated", info.simulated()},
      {"simulated_device", info.simulated() ? nlohmann::json(info.simulated_device) : nlohmann::json(nullptr)},
      {"algorithm", info.algorithm},
      {"iters", info.iters},
      {"warmup", info.warmup},
      {"check", info.check},
      {"timeout_seconds", info.timeout_seconds},
      {"packing", info.packing},
      {"form", info.form},
      {"progress_thread", info.progress_thread},
      {"stream_ordered", info.stream_ordered},
      {"overlap", info.overlap},
      {"overlap_compute", info.overlap ? nlohmann::json(info.overlap_compute) : nlohmann::json(nullptr)},
      {"bus_factor", info.bus_factor_formula},
      {"baseline", info.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.baseline)},
      {"time_unit", "us, median over iterations of the max over ranks"},
      {"bandwidth_unit", "GB/s (1e9 bytes/s)"},
  };
  if (!info.model.empty())
    j["model"] = {{"name", info.model},
                  {"source", info.model_source},
                  {"tensors", info.model_tensors},
                  {"parameters", info.model_parameters}};
  nlohmann::json out_rows = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json row = {{"bytes", r.bytes},      {"count", r.count},   {"tensors", r.tensors},
                          {"algorithm", r.algorithm}, {"time", timing_json(r.time)}, {"time_us", r.time.median_us},
                          {"algbw", or_null(r.algbw)}, {"busbw", or_null(r.busbw)},
                          {"wrong", r.wrong ? nlohmann::json(*r.wrong) : nlohmann::json(nullptr)}};
    if (r.host_time) {
      row["host_time"] = timing_json(*r.host_time);
      row["host_us"] = r.host_time->median_us;
    }
    if (r.device_time) {
      row["device_time"] = timing_json(*r.device_time);
      row["device_us"] = r.device_time->median_us;
    }
    if (r.baseline_time) {
      row["baseline"] = {{"time", timing_json(*r.baseline_time)},
                         {"time_us", r.baseline_time->median_us},
                         {"algbw", or_null(r.baseline_algbw)},
                         {"busbw", or_null(r.baseline_busbw)}};
      if (r.baseline_host_time) {
        row["baseline"]["host_time"] = timing_json(*r.baseline_host_time);
        row["baseline"]["host_us"] = r.baseline_host_time->median_us;
      }
      if (r.baseline_device_time) {
        row["baseline"]["device_time"] = timing_json(*r.baseline_device_time);
        row["baseline"]["device_us"] = r.baseline_device_time->median_us;
      }
      row["ratio"] = or_null(r.ratio());
      row["overhead_us"] = or_null(r.overhead_us());
      if (r.host_time && r.baseline_host_time) row["host_overhead_us"] = or_null(r.host_overhead_us());
      if (r.device_time && r.baseline_device_time) row["device_overhead_us"] = or_null(r.device_overhead_us());
    }
    if (r.overlap && info.stream_overlap()) {
      row["t_comm_us"] = r.overlap->pure.median_us;
      row["t_compute_us"] = r.overlap->compute.median_us;
      row["t_both_us"] = r.overlap->total.median_us;
      row["overlap_pct"] = or_null(r.overlap->percent);
    } else if (r.overlap) {
      row["t_pure_us"] = r.overlap->pure.median_us;
      row["t_compute_us"] = r.overlap->compute.median_us;
      row["t_total_us"] = r.overlap->total.median_us;
      row["overlap_pct"] = or_null(r.overlap->percent);
    }
    out_rows.push_back(row);
  }
  j["rows"] = out_rows;
  j["summary"] = {{"avg_busbw", or_null(summary.avg_busbw)}, {"wrong_total", summary.wrong_total}};
  if (!info.baseline.empty()) j["summary"]["avg_baseline_busbw"] = or_null(summary.avg_baseline_busbw);
  if (summary.memcpy_gbps)
    j["summary"]["memcpy"] = {{"gbps", *summary.memcpy_gbps}, {"bytes", summary.memcpy_bytes}};
  if (summary.device_copy) {
    j["summary"]["device_copy"] = {{"d2h_gbps", or_null(summary.d2h_gbps)},
                                   {"h2d_gbps", or_null(summary.h2d_gbps)},
                                   {"bytes", summary.memcpy_bytes},
                                   {"host_buffer", "pinned (cudaMallocHost)"}};
    if (auto f = staged_fraction(rows, summary)) j["summary"]["device_copy"]["largest_algbw_fraction"] = *f;
  }
  return j.dump(2) + '\n';
}

std::string csv_text(const RunInfo& info, const std::vector<Row>& rows) {
  std::string text =
      "collective,ranks,dtype,op,root,algorithm,bytes,count,tensors,time_us,algbw,busbw,wrong,"
      "baseline_time_us,baseline_busbw,ratio,overhead_us,simulated,form,progress_thread,"
      "t_pure_us,t_compute_us,t_total_us,overlap_pct,stream_ordered,host_us,device_us,baseline_host_us,"
      "baseline_device_us,host_overhead_us,t_comm_us,t_both_us\n";
  for (const auto& r : rows) {
    text += fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{},{},{},", info.collective, info.ranks, info.dtype, info.op,
                        info.root, r.algorithm, r.bytes, r.count, r.tensors, r.time.median_us, csv_number(r.algbw, 4),
                        csv_number(r.busbw, 4), r.wrong ? fmt::format("{}", *r.wrong) : "");
    if (r.baseline_time)
      text += fmt::format("{:.3f},{},{},{}", r.baseline_time->median_us, csv_number(r.baseline_busbw, 4),
                          csv_number(r.ratio(), 4), csv_number(r.overhead_us(), 3));
    else
      text += ",,,";
    text += fmt::format(",{},{},{},", r.simulated ? 1 : 0, info.form, info.progress_thread ? 1 : 0);
    // With --stream-ordered the overlap's first and third times are T_comm
    // and T_both, in columns of their own; pure and total stay empty.
    const bool stream_overlap = r.overlap && info.stream_overlap();
    if (r.overlap)
      text += fmt::format("{},{:.3f},{},{}", stream_overlap ? "" : fmt::format("{:.3f}", r.overlap->pure.median_us),
                          r.overlap->compute.median_us,
                          stream_overlap ? "" : fmt::format("{:.3f}", r.overlap->total.median_us),
                          csv_number(r.overlap->percent, 2));
    else
      text += ",,,";
    auto median = [](const std::optional<Timing>& t) {
      return t ? std::optional<double>(t->median_us) : std::nullopt;
    };
    text += fmt::format(",{},{},{},{},{},{},", info.stream_ordered ? 1 : 0, csv_number(median(r.host_time), 3),
                        csv_number(median(r.device_time), 3), csv_number(median(r.baseline_host_time), 3),
                        csv_number(median(r.baseline_device_time), 3), csv_number(r.host_overhead_us(), 3));
    if (stream_overlap)
      text += fmt::format("{:.3f},{:.3f}\n", r.overlap->pure.median_us, r.overlap->total.median_us);
    else
      text += ",\n";
  }
  return text;
}

}  // namespace bench
