#include "project.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "options.hpp"
#include "strata/spec.hpp"

namespace tune {
namespace {

// "400Gb/s" -> 400, "Gb/s"; false when there is no number.
bool number_and_unit(const std::string& text, double& number, std::string& unit) {
  std::size_t used = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  return number > 0;
}

}  // namespace

std::optional<model::Link> parse_network(const std::string& text, std::string& why) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) {
    why = "expected 'BANDWIDTH,LATENCY' such as '400Gb/s,2us'";
    return std::nullopt;
  }
  static const std::map<std::string, double> bytes_per_second = {
      {"Gb/s", 1e9 / 8}, {"Gbit/s", 1e9 / 8}, {"Mb/s", 1e6 / 8}, {"Mbit/s", 1e6 / 8}, {"GB/s", 1e9}, {"MB/s", 1e6}};
  static const std::map<std::string, double> seconds = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  double bandwidth = 0, latency = 0;
  std::string bw_unit, lat_unit;
  if (!number_and_unit(text.substr(0, comma), bandwidth, bw_unit) || !bytes_per_second.count(bw_unit)) {
    why = fmt::format("bandwidth '{}': expected a number > 0 and one of Gb/s, Gbit/s, Mb/s, Mbit/s, GB/s, MB/s",
                      text.substr(0, comma));
    return std::nullopt;
  }
  if (!number_and_unit(text.substr(comma + 1), latency, lat_unit) || !seconds.count(lat_unit)) {
    why = fmt::format("latency '{}': expected a number > 0 and one of s, ms, us, ns", text.substr(comma + 1));
    return std::nullopt;
  }
  const double beta = 1 / (bandwidth * bytes_per_second.at(bw_unit));
  return model::Link{latency * seconds.at(lat_unit), beta, beta};  // a NIC streams any size at its rate
}

std::vector<std::string> projection_plans() {
  std::vector<std::string> plans = model::modelled_algorithms();
  for (const strata::AlgorithmInfo& a : strata::registered_algorithms())
    if (a.memory == strata::Memory::host && a.shared_memory)
      for (const std::string& b : model::modelled_algorithms()) plans.push_back(a.name + "/" + b);
  return plans;
}

std::vector<ProjectionRow> project(const model::Machine& machine, const std::vector<std::string>& plans,
                                   int ranks_per_node, int min_nodes, int max_nodes,
                                   const std::vector<std::size_t>& sizes) {
  std::vector<ProjectionRow> rows;
  for (std::size_t bytes : sizes)
    for (int nodes = min_nodes; nodes <= max_nodes; nodes *= 2) {
      const int ranks = nodes * ranks_per_node;
      for (const std::string& plan : plans) {
        const auto t = model::predict_all_reduce(machine, plan, double(bytes), model::Shape{ranks_per_node, nodes, 1});
        if (!t) continue;
        const double bus = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
        rows.push_back({bytes, nodes, ranks, plan, *t, *t > 0 ? double(bytes) / *t * bus / 1e9 : 0});
      }
    }
  return rows;
}

std::string projection_report(const std::vector<ProjectionRow>& rows, const std::vector<std::string>& plans) {
  std::string t;
  std::size_t i = 0;
  while (i < rows.size()) {
    const std::size_t bytes = rows[i].bytes;
    t += fmt::format(
        "# {} per rank: predicted time (us) per plan; best plan, its busbw (GB/s) and margin over the runner-up\n",
        human_bytes(double(bytes)));
    t += fmt::format("{:>6} {:>6}", "nodes", "ranks");
    for (const auto& p : plans) t += fmt::format(" {:>12}", p);
    t += fmt::format("  {:>12} {:>8} {:>8}\n", "best", "busbw", "margin");
    while (i < rows.size() && rows[i].bytes == bytes) {
      const int nodes = rows[i].nodes;
      std::vector<const ProjectionRow*> group;
      for (; i < rows.size() && rows[i].bytes == bytes && rows[i].nodes == nodes; ++i) group.push_back(&rows[i]);
      t += fmt::format("{:>6} {:>6}", nodes, group.front()->ranks);
      for (const auto& p : plans) {
        const auto it = std::find_if(group.begin(), group.end(), [&](const ProjectionRow* r) { return r->plan == p; });
        t += it == group.end() ? fmt::format(" {:>12}", "-") : fmt::format(" {:>12.1f}", (*it)->seconds * 1e6);
      }
      std::sort(group.begin(), group.end(),
                [](const ProjectionRow* a, const ProjectionRow* b) { return a->seconds < b->seconds; });
      const double margin = group.size() > 1 ? group[1]->seconds / group[0]->seconds - 1 : 0;
      t += fmt::format("  {:>12} {:>8.2f} {:>7.0f}%\n", group[0]->plan, group[0]->busbw_gbps, 100 * margin);
    }
  }
  return t;
}

std::string projection_csv(const std::vector<ProjectionRow>& rows) {
  std::string csv = "bytes,nodes,ranks,plan,time_us,busbw_gbps\n";
  for (const auto& r : rows)
    csv += fmt::format("{},{},{},{},{:.4f},{:.4f}\n", r.bytes, r.nodes, r.ranks, r.plan, r.seconds * 1e6, r.busbw_gbps);
  return csv;
}

}  // namespace tune
