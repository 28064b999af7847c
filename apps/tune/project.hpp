// --project: the cost model's prediction for a cluster this machine is not,
// e.g. 1..1024 nodes x 8 ranks on a 400 Gb/s network: per node count and
// plan the time and bus bandwidth, and which plan wins by how much. The
// node's own parameters (shared memory, MPI inside the node, gamma) come
// from a calibration (.model file); the network's from --network.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "strata/cost_model.hpp"

namespace tune {

namespace model = strata::model;  // the cost model (strata/cost_model.hpp)

// "400Gb/s,2us" -> model::Link{alpha 2e-6 s, beta 1 / 50e9 s per byte}. Bandwidth
// units Gb/s, Mb/s (bits), GB/s, MB/s (bytes; 1e9 / 1e6); latency us, ns,
// ms or s. nullopt with `why` when the text is not that.
std::optional<model::Link> parse_network(const std::string& text, std::string& why);

struct ProjectionRow {
  std::size_t bytes = 0;
  int nodes = 0, ranks = 0;
  std::string plan;
  double seconds = 0;
  double busbw_gbps = 0;  // bytes / seconds x 2(n-1)/n, 1e9 bytes per second
};

// Every plan at every node count (powers of 2 from min to max) and size.
std::vector<ProjectionRow> project(const model::Machine& machine, const std::vector<std::string>& plans,
                                   int ranks_per_node, int min_nodes, int max_nodes,
                                   const std::vector<std::size_t>& sizes);

// The plans --project compares: every modelled algorithm flat, and a/b
// with a each shared-memory algorithm and b every modelled one.
std::vector<std::string> projection_plans();

// The printed tables (time and busbw per plan, then the winner and its
// margin over the runner-up), and the CSV (size,nodes,ranks,plan,time_us,busbw_gbps).
std::string projection_report(const std::vector<ProjectionRow>& rows, const std::vector<std::string>& plans);
std::string projection_csv(const std::vector<ProjectionRow>& rows);

}  // namespace tune
