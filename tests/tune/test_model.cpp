// The cost model's arithmetic against values computed by hand from the
// formulas in docs/SCALING.md, with round parameters so each sum can be
// checked on paper: alpha 1 us, beta 1 ns/B, gamma 2 ns/B (shared memory:
// alpha 0.5 us, beta 0.5 ns/B; inter-node: alpha 10 us, beta 4 ns/B).
// Also the pure pieces around it: ranges from measurements, the .model
// file, --network.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "choice.hpp"
#include "strata/cost_model.hpp"
#include "project.hpp"
#include "strata/spec.hpp"
#include "strata/topology.hpp"

using namespace tune;
namespace model = strata::model;

namespace {

model::Machine round_machine() {
  model::Machine m;
  m.intra = {1e-6, 1e-9, 3e-9};
  m.inter = {10e-6, 4e-9, 4e-9};
  m.shm = {0.5e-6, 0.5e-9, 1.5e-9};
  m.gamma = 2e-9;
  m.gamma_memory = 4e-9;
  m.cache_bytes = 8 << 20;  // every case below is in the caches' regime, but the last
  return m;
}

double us(std::string_view plan, double bytes, model::Shape shape) {
  const auto t = model::predict_all_reduce(round_machine(), plan, bytes, shape);
  REQUIRE(t.has_value());
  return *t * 1e6;
}

}  // namespace

TEST_CASE("ring on one node: 2(n-1) steps of m/n, chunked in 256 KiB messages") {
  // n = 4, m = 4 MiB: segment 1 MiB = 4 chunks. Per step 4 x 1 us + 1048576 x 1 ns
  // = 1052.576 us; 6 steps = 6315.456 us; reduction 3 x 1048576 x 2 ns = 6291.456 us.
  CHECK(us("xring", 4 << 20, {4, 1}) == doctest::Approx(12606.912));
  // 8 B: segment 2 B, one message per step: 6 x (1 + 0.002) + 3 x 2 B x 2 ns = 6.024 us.
  CHECK(us("xring", 8, {4, 1}) == doctest::Approx(6.024));
  // Two shards: each ring's segment in its own messages: 2 per step at 8 B
  // (6 x (2 + 0.002) + 0.012), the same 4 chunks per step at 4 MiB.
  CHECK(us("xring#2", 8, {4, 1}) == doctest::Approx(12.024));
  CHECK(us("xring#2", 4 << 20, {4, 1}) == doctest::Approx(12606.912));
}

TEST_CASE("rechd: halving and doubling, log2 p steps each; recursive doubling up to 8 KiB") {
  // n = 4, m = 1 MiB (1048576 B): halving sends 524288 then 262144 B.
  // Each step counted twice (halving + doubling): 2 x (1 + 524.288) + 2 x (1 + 262.144)
  // = 1576.864 us; reduction 786432 B x 2 ns = 1572.864 us.
  CHECK(us("rechd", 1 << 20, {4, 1}) == doctest::Approx(3149.728));
  // n = 3: one fold (2 x (1 + 1048.576) + 2097.152) plus p = 2: 2 x (1 + 524.288) + 1048.576.
  CHECK(us("rechd", 1 << 20, {3, 1}) == doctest::Approx(2099.152 + 2097.152 + 1050.576 + 1048.576));
  // Two shards: two slices of 512 KiB one after another, each half the above minus alphas.
  CHECK(us("rechd#2", 1 << 20, {4, 1}) == doctest::Approx(2 * (4 + 786.432 + 786.432)));
  // Up to 8 KiB, recursive doubling: log2 p exchanges of the whole message,
  // each reducing it. n = 4, m = 1 KiB: 2 x (1 + 1.024 + 2.048).
  CHECK(us("rechd", 1024, {4, 1}) == doctest::Approx(8.144));
  // n = 3: the fold (2 x (1 + 1.024) + 2.048) plus one exchange.
  CHECK(us("rechd", 1024, {3, 1}) == doctest::Approx(6.096 + 4.072));
  // 8 KiB is the last size doubled: 2 x (1 + 8.192 + 16.384); one byte more halves.
  CHECK(us("rechd", 8192, {4, 1}) == doctest::Approx(51.152));
  CHECK(us("rechd", 8193, {4, 1}) == doctest::Approx(2 * (1 + 4.0965) + 2 * (1 + 2.04825) + 6.14475 * 2));
}

TEST_CASE("tree: binomial reduce and broadcast of the whole message") {
  // n = 4: 2 rounds, each 2 x (1 + 1048.576) + 2097.152 = 4196.304 us.
  CHECK(us("tree", 1 << 20, {4, 1}) == doctest::Approx(2 * 4196.304));
  // 2 nodes of 2: round 1 (distance 1) inside the node, round 2 across:
  // 2 x (10 + 4194.304) + 2097.152 = 10505.76.
  CHECK(us("tree", 1 << 20, {2, 2}) == doctest::Approx(4196.304 + 10505.76));
}

TEST_CASE("pscpu over shared memory: the path by size") {
  // 8 B, 2 ranks: one round: 0.5 + 8 x 0.0005 + 8 x 0.002 = 0.52 us.
  CHECK(us("pscpu", 8, {2, 1}) == doctest::Approx(0.52));
  // 8 MiB, 2 ranks, owners: 2 x 0.5 + 0.5 x 8388608 x 2.5 ns + 0.5 x 8388608 x 0.5 ns = 12583.912 us.
  CHECK(us("pscpu", 8 << 20, {2, 1}) == doctest::Approx(12583.912));
  // 128 KiB, 2 ranks, replicated: 0.5 + 131072 x 2.5 ns = 328.18 us.
  CHECK(us("pscpu", 128 << 10, {2, 1}) == doctest::Approx(328.18));
}

TEST_CASE("pscpu's replicated path, and it alone, scales by shm_direct_scale") {
  model::Machine m = round_machine();
  m.shm_direct_scale = 0.5;
  auto scaled = [&](double bytes) { return *model::predict_all_reduce(m, "pscpu", bytes, {2, 1}) * 1e6; };
  // 64 KiB and just under 512 KiB are replicated: half of 0.5 + m x 2.5 ns.
  CHECK(scaled(64 << 10) == doctest::Approx(0.5 * (0.5 + 65536 * 2.5e-3)));
  CHECK(scaled((512 << 10) - 4) == doctest::Approx(0.5 * (0.5 + 524284 * 2.5e-3)));
  // The one round, the rounds and the owners keep their times.
  CHECK(scaled(8) == doctest::Approx(0.52));
  CHECK(scaled(32 << 10) == doctest::Approx(us("pscpu", 32 << 10, {2, 1})));
  CHECK(scaled(512 << 10) == doctest::Approx(us("pscpu", 512 << 10, {2, 1})));
  CHECK(scaled(8 << 20) == doctest::Approx(12583.912));
  // So do the other plans, and pscpu across nodes (point-to-point owners).
  CHECK(*model::predict_all_reduce(m, "xring", 128 << 10, {2, 1}) * 1e6 == doctest::Approx(us("xring", 128 << 10, {2, 1})));
  CHECK(*model::predict_all_reduce(m, "pscpu", 128 << 10, {1, 2}) * 1e6 == doctest::Approx(us("pscpu", 128 << 10, {1, 2})));
}

TEST_CASE("hierarchical: shared-memory reduce-scatter, b on the slice, all-gather") {
  // 2 nodes x 2 ranks, pscpu/xring, m = 4 MiB:
  // scatter 0.5 + 2097152 x 2.5 ns = 5243.38; gather 0.5 + 2097152 x 0.5 ns = 1049.076;
  // across: ring of 2 nodes on 2 MiB slices, the link shared by the 2 local ranks
  // (beta 8 ns): segment 1 MiB = 4 chunks: 2 x (4 x 10 + 1048576 x 8 ns) + 1048576 x 2 ns
  // = 16857.216 + 2097.152 = 18954.368.
  CHECK(us("pscpu/xring", 4 << 20, {2, 2}) == doctest::Approx(5243.38 + 1049.076 + 18954.368));
  // Nodes of one rank: b alone on the whole message, the link to itself.
  // 2 nodes: segment 2 MiB = 8 chunks: 2 x (80 + 8388.608) + 4194.304.
  CHECK(us("pscpu/xring", 4 << 20, {1, 2}) == doctest::Approx(2 * (80 + 8388.608) + 4194.304));
  CHECK(us("pscpu/xring", 4 << 20, {1, 2}) == doctest::Approx(us("xring", 4 << 20, {1, 2})));
  // One node: a alone.
  CHECK(us("pscpu/xring", 8 << 20, {2, 1}) == doctest::Approx(12583.912));
}

TEST_CASE("mpi: the better of recursive doubling and a ring, times the calibrated scale of its regime") {
  // 2 ranks on one node, 1 MiB: doubling one exchange 1 + 1048.576 + 2097.152
  // = 3146.728 us; ring 2 x (1 + 524.288) + 524288 x 2 ns = 2099.152 us: the ring.
  CHECK(us("mpi", 1 << 20, {2, 1}) == doctest::Approx(2099.152));
  model::Machine m = round_machine();
  m.mpi_scale = 1.5;
  m.mpi_scale_memory = 3;
  CHECK(*model::predict_all_reduce(m, "mpi", 1 << 20, {2, 1}) * 1e6 == doctest::Approx(1.5 * 2099.152));
  // 16 MiB is beyond cache_bytes: the memory regime's scale, beta and gamma:
  // ring 2 x (1 + 8388608 x 3 ns) + 8388608 x 4 ns = 50333.648 + 33554.432 us.
  CHECK(*model::predict_all_reduce(m, "mpi", 16 << 20, {2, 1}) * 1e6 ==
        doctest::Approx(3 * (50333.648 + 33554.432)));
  // Only the guess scales: the other plans stay as they were.
  CHECK(*model::predict_all_reduce(m, "xring", 1 << 20, {2, 1}) * 1e6 == doctest::Approx(us("xring", 1 << 20, {2, 1})));
}

TEST_CASE("beyond cache_bytes the memory regime's beta and gamma apply") {
  // 16 MiB, 2 ranks, pscpu owners: 2 x 0.5 + 0.5 x 16777216 x (1.5 + 4) ns + 0.5 x 16777216 x 1.5 ns
  // = 1 + 46137.344 + 12582.912.
  CHECK(us("pscpu", 16 << 20, {2, 1}) == doctest::Approx(1 + 46137.344 + 12582.912));
  // tree, 2 ranks, 16 MiB: one round: 2 x (1 + 16777216 x 3 ns) + 16777216 x 4 ns = 2 + 100663.296 + 67108.864.
  CHECK(us("tree", 16 << 20, {2, 1}) == doctest::Approx(2 + 100663.296 + 67108.864));
}

TEST_CASE("oversubscribed: a phase lasts at least its busy time times the ranks per core") {
  // Symmetric plans: every rank busy throughout, the whole time scales.
  CHECK(us("xring", 1 << 20, {4, 1, 2}) == doctest::Approx(2 * us("xring", 1 << 20, {4, 1})));
  // tree, 4 ranks, 1 MiB: a round (reduce + broadcast) 2 x (1 + 1048.576) + 2097.152 = 4196.304 us,
  // two rounds 8392.608. Busy: 2 receivers of 4 in the first round, 1 in the second: 0.75 round
  // = 3147.228 per rank. 2 ranks per core: 6294.456 < 8392.608, the rounds' own time stands;
  // 4 per core: 12588.912.
  CHECK(us("tree", 1 << 20, {4, 1, 1}) == doctest::Approx(8392.608));
  CHECK(us("tree", 1 << 20, {4, 1, 2}) == doctest::Approx(8392.608));
  CHECK(us("tree", 1 << 20, {4, 1, 4}) == doctest::Approx(12588.912));
  // Hierarchical: each level by itself. pscpu/tree, 2 nodes x 2 ranks, 4 MiB, 2 per core:
  // scatter and gather (above: 5243.38 + 1049.076) doubled; across, one tree round of 2 nodes
  // on 2 MiB over the shared link (beta 8 ns): 2 x (10 + 16777.216) + 4194.304 = 37768.736,
  // busy half of it (one receiver of two), so 2 x busy is the round's own time.
  CHECK(us("pscpu/tree", 4 << 20, {2, 2, 2}) == doctest::Approx(2 * (5243.38 + 1049.076) + 37768.736));
  // A ring over 2 nodes x 2 ranks, 4 MiB (segments of 1 MiB, 4 chunks): each step lasts as long
  // as the hop leaving the node, 4 x 10 + 4194.304, but keeps an average rank busy for the mean
  // of that hop and the one inside the node, 4 x 5.5 + 2621.44. Reduction 6291.456 either way.
  // Time 6 x 4234.304 + 6291.456 = 31697.28; busy 6 x 2643.44 + 6291.456 = 22152.096.
  CHECK(us("xring", 4 << 20, {2, 2}) == doctest::Approx(31697.28));
  CHECK(us("xring", 4 << 20, {2, 2, 2}) == doctest::Approx(2 * 22152.096));
}

TEST_CASE("nodes of one host share no link between them") {
  // pscpu across 2 nodes x 2 ranks, 1 MiB, slices of 262144 B: per phase two slices cross and one
  // stays in the node (1 + 262.144); three slices reduced (1572.864). Separate hosts: both ranks of
  // a node cross at once, beta 2 x 4 ns: 2 x (2 x (10 + 2097.152) + 263.144) + 1572.864;
  // virtual nodes of one host: beta 4 ns: 2 x (2 x (10 + 1048.576) + 263.144) + 1572.864.
  CHECK(us("pscpu", 1 << 20, {2, 2}) == doctest::Approx(2 * (4214.304 + 263.144) + 1572.864));
  CHECK(us("pscpu", 1 << 20, {2, 2, 1, true}) == doctest::Approx(2 * (2117.152 + 263.144) + 1572.864));
  // pscpu/xring, 4 MiB (above, 5243.38 + 1049.076 + 18954.368 on separate hosts): across, the
  // 2 MiB slices' ring at beta 4: 2 x (4 x 10 + 4194.304) + 2097.152 = 10565.76.
  CHECK(us("pscpu/xring", 4 << 20, {2, 2, 1, true}) == doctest::Approx(5243.38 + 1049.076 + 10565.76));
}

TEST_CASE("unknown names get no prediction") {
  CHECK_FALSE(model::predict_all_reduce(round_machine(), "nccl", 1024, {2, 1}).has_value());
  CHECK_FALSE(model::predict_all_reduce(round_machine(), "no-such", 1024, {2, 1}).has_value());
}

// The candidates spec_from_model compares, built here from the public
// registry: the flat modelled algorithms but mpi (a guess at the MPI
// library's choice), and on several nodes the shared-memory one over each.
std::vector<std::string> model_candidates(const model::Shape& shape) {
  std::vector<std::string> flat;
  for (const std::string& name : model::modelled_algorithms())
    if (name != "mpi") flat.push_back(name);
  std::vector<std::string> plans = flat;
  if (shape.nodes > 1)
    for (const std::string& b : flat) plans.push_back("pscpu/" + b);
  return plans;
}

TEST_CASE("spec_from_model: free shared memory is pscpu at every size") {
  model::Machine m = round_machine();
  m.shm = {0, 0, 0};
  m.gamma = m.gamma_memory = 0.001e-9;
  CHECK(model::spec_from_model(m, {2, 1}) == "pscpu");
  CHECK(model::spec_from_model(m, {8, 1}) == "pscpu");
  // On several nodes the hierarchical plans keep the bytes inside the node first.
  CHECK(model::spec_from_model(m, {4, 16}).rfind("pscpu/", 0) == 0);
}

TEST_CASE("spec_from_model: each size runs the plan predicted fastest, ranges end at the last size they won") {
  model::Machine slow_shm = round_machine();
  slow_shm.shm = {1.0, 1e-6, 1e-6};
  for (const model::Machine& m : {round_machine(), slow_shm})
    for (const model::Shape shape : {model::Shape{2, 1}, model::Shape{1, 2}, model::Shape{2, 2}, model::Shape{8, 64}}) {
      const strata::AllReduceSpec spec(model::spec_from_model(m, shape));
      CAPTURE(spec.to_string());
      REQUIRE_FALSE(spec.is_auto());
      CHECK(spec.tuples().back().limit == -1);
      for (int power = 0; power <= 40; ++power) {
        const double bytes = std::ldexp(1.0, power);
        CAPTURE(bytes);
        const strata::SpecTuple* chosen = spec.select(static_cast<std::size_t>(bytes));
        REQUIRE(chosen != nullptr);
        const double t = *model::predict_all_reduce(m, chosen->algorithm, bytes, shape);
        for (const std::string& other : model_candidates(shape)) {
          CAPTURE(other);
          CHECK(t <= *model::predict_all_reduce(m, other, bytes, shape));
        }
      }
    }
  // By hand, 2 ranks on one node with shared memory out of the race (alpha
  // 1 us, beta 1 ns/B, gamma 2 ns/B; us, m in bytes): rechd up to 8 KiB is
  // one recursive-doubling exchange, alpha + m beta + m gamma = 1 + 0.003 m,
  // above it halving + doubling, 2 alpha + m beta + m gamma / 2 =
  // 2 + 0.002 m, as the ring while its step is one chunk (up to 512 KiB;
  // one more alpha per chunk beyond); tree 2 + 0.004 m. So rechd wins below
  // 1000 B, the ring from there to 8 KiB, then they tie (the earlier
  // registered name takes a tie) up to 512 KiB, and rechd wins beyond.
  // mpi (the same recursive doubling here) is no candidate.
  const std::vector<std::string> names = model::modelled_algorithms();
  const auto position = [&](const char* name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  const std::string modelled = position("xring") < position("rechd") ? std::string("rechd:512:xring:512k:rechd")
                                                                     : std::string("rechd:512:xring:8k:rechd");
  CHECK(model::spec_from_model(slow_shm, {2, 1}) == modelled);
  // An incumbent stays while within the margin: the ring (2 + 0.002 m) is
  // within 50% of rechd's 1 + 0.003 m from m = 200 B (256 B up), and of
  // everything from 1000 B, chunks included.
  CHECK(model::spec_from_model(slow_shm, {2, 1}, strata::AllReduceSpec("xring"), 0.5) == "rechd:128:xring");
  // tree is slower than the winner everywhere: without a margin it never stays.
  CHECK(model::spec_from_model(slow_shm, {2, 1}, strata::AllReduceSpec("tree"), 0) == modelled);
  // A plan without a formula never stays.
  CHECK(model::spec_from_model(slow_shm, {2, 1}, strata::AllReduceSpec("nccl"), 10.0) == modelled);
  // An incumbent mpi always does (the model only guesses at MPI's choice),
  // even where its guess is slower and with no margin.
  // At 4 ranks its guess (the unchunked ring at 1 MiB) is 2 alpha slower
  // than halving-doubling.
  CHECK(*model::predict_all_reduce(slow_shm, "mpi", 1 << 20, {4, 1}) >
        *model::predict_all_reduce(slow_shm, "rechd", 1 << 20, {4, 1}));
  const std::string kept = model::spec_from_model(slow_shm, {4, 1}, strata::AllReduceSpec("mpi:1m:tree"), 0);
  CHECK(kept.rfind("mpi:1M:", 0) == 0);
  CHECK(kept.find("tree") == std::string::npos);  // the other incumbent is judged
}

TEST_CASE("shape_of: fewest ranks on a node, ranks per core on the busiest host") {
  strata::Topology t;
  t.ranks.resize(5);
  // Two virtual nodes of one 2-core host (3 + 1 ranks) and a 4-core host with one rank.
  t.nodes = {{.hostname = "a", .ranks = {0, 1, 2}, .cores = 2},
             {.hostname = "a", .ranks = {3}, .cores = 2},
             {.hostname = "b", .ranks = {4}, .cores = 4}};
  const model::Shape shape = model::shape_of(t);
  CHECK(shape.nodes == 3);
  CHECK(shape.ranks_per_node == 1);
  CHECK(shape.oversubscription == doctest::Approx(2.0));
  CHECK_FALSE(shape.one_host);
  // Hosts emulated on one machine (different names, one boot id) share its cores.
  t.nodes = {{.hostname = "a", .ranks = {0, 1}, .cores = 2, .machine = "boot-1"},
             {.hostname = "b", .ranks = {2, 3}, .cores = 2, .machine = "boot-1"}};
  t.ranks.resize(4);
  CHECK(model::shape_of(t).oversubscription == doctest::Approx(2.0));
  CHECK(model::shape_of(t).one_host);
  t.nodes[1].machine = "boot-2";
  CHECK(model::shape_of(t).oversubscription == doctest::Approx(1.0));
  CHECK_FALSE(model::shape_of(t).one_host);
  t.nodes = {{.hostname = "a", .ranks = {0, 1}, .cores = 0}};  // no core count: not oversubscribed
  t.ranks.resize(2);
  CHECK(model::shape_of(t).oversubscription == doctest::Approx(1.0));
  CHECK(model::shape_of(t).ranks_per_node == 2);
}

TEST_CASE("ranges: neighbouring sizes with one winner merge; near-ties stay in the range") {
  // plans: 0 = a, 1 = b
  const std::vector<SizeResult> results = {{8, {1.0, 2.0}}, {64, {1.0, 3.0}}, {512, {5.0, 2.0}}, {4096, {9.0, 8.9}}};
  const auto ranges = merge_ranges(results, 0.03);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].plan == 0);
  CHECK(ranges[0].limit == 64);
  CHECK(ranges[1].plan == 1);
  CHECK(ranges[1].limit == -1);
  CHECK(ranges[1].evidence.size() == 2);
  CHECK(spec_text(ranges, {"tree", "xring#2"}) == "tree:64:xring#2");
  // Without the tie, 8.9 against 9.0 is still b's: same ranges; a near-tie the other way:
  const std::vector<SizeResult> flip = {{8, {1.0, 2.0}}, {64, {1.02, 1.0}}, {512, {1.0, 2.0}}};
  CHECK(merge_ranges(flip, 0.03).size() == 1);
  CHECK(merge_ranges(flip, 0).size() == 3);
  CHECK(pick({8, {-1, 3.0, 2.0}}).best == 2);
  CHECK(pick({8, {-1, 3.0, 2.0}}).margin() == doctest::Approx(0.5));
}

TEST_CASE("contests: missed sizes where the spec runs another plan than the winner") {
  const std::vector<std::string> plans = {"pscpu", "xring#2", "tree"};
  // 8: pscpu wins; 64: xring#2 wins; 512: tree wins; 4096: xring#2 wins.
  const std::vector<SizeResult> results = {
      {8, {1.0, 2.0, 3.0}}, {64, {2.0, 1.0, 3.0}}, {512, {3.0, 2.0, 1.0}}, {4096, {3.0, 1.0, 2.0}}};
  // The spec kept pscpu up to 64 and xring#2 beyond: 64 and 512 run another plan.
  const std::string spec = "pscpu:64:xring#2";
  // Every size missed: contests at 64 (pscpu kept, xring#2 best) and 512 (xring#2 kept, tree best).
  const auto all = contests(results, {1.2, 1.2, 1.2, 1.2}, spec, plans, 1.05);
  REQUIRE(all.size() == 2);
  CHECK(all[0].size == 1);
  CHECK(all[0].kept == 0);
  CHECK(all[0].best == 1);
  CHECK(all[1].size == 2);
  CHECK(all[1].kept == 1);
  CHECK(all[1].best == 2);
  // Met sizes are no contest, nor misses where the spec runs the winner (8, 4096).
  CHECK(contests(results, {1.2, 1.0, 1.05, 1.2}, spec, plans, 1.05).empty());
  // A spec plan that is no candidate is left alone.
  CHECK(contests(results, {1.2, 1.2, 1.2, 1.2}, "rechd", plans, 1.05).empty());
}

TEST_CASE(".model file round trip and errors") {
  const model::Machine m = round_machine();
  const model::Machine back = model::parse_model(model::model_text(m, "a comment\nline two"), "test.model");
  CHECK(back.intra.alpha == doctest::Approx(m.intra.alpha));
  CHECK(back.inter.beta == doctest::Approx(m.inter.beta));
  CHECK(back.shm.beta == doctest::Approx(m.shm.beta));
  CHECK(back.gamma == doctest::Approx(m.gamma));
  CHECK_THROWS_AS(model::parse_model("gamma_ns_per_byte = 1\n", "x"), model::ModelFileError);          // missing keys
  CHECK_THROWS_AS(model::parse_model(model::model_text(m, "") + "bogus = 1\n", "x"), model::ModelFileError);  // unknown key
  CHECK_THROWS_AS(model::parse_model(model::model_text(m, "") + "gamma_ns_per_byte = 1\n", "x"), model::ModelFileError);  // twice
}

TEST_CASE(".model file: the three scales round trip, may be absent (1), and must be above 0") {
  model::Machine m = round_machine();
  m.mpi_scale = 1.25;
  m.mpi_scale_memory = 2.5;
  m.shm_direct_scale = 0.625;
  const std::string text = model::model_text(m, "");
  const model::Machine back = model::parse_model(text, "test.model");
  CHECK(back.mpi_scale == doctest::Approx(1.25));
  CHECK(back.mpi_scale_memory == doctest::Approx(2.5));
  CHECK(back.shm_direct_scale == doctest::Approx(0.625));
  // A file written before the scales: every other key, none of them.
  std::string older;
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    if (line.rfind("mpi_scale", 0) != 0 && line.rfind("shm_direct_scale", 0) != 0) older += line + "\n";
  }
  const model::Machine old = model::parse_model(older, "older.model");
  CHECK(old.mpi_scale == 1);
  CHECK(old.mpi_scale_memory == 1);
  CHECK(old.shm_direct_scale == 1);
  CHECK(old.gamma == doctest::Approx(m.gamma));
  CHECK_THROWS_AS(model::parse_model(older + "mpi_scale = 0\n", "x"), model::ModelFileError);
  CHECK_THROWS_AS(model::parse_model(older + "mpi_scale_memory = -1\n", "x"), model::ModelFileError);
  CHECK_THROWS_AS(model::parse_model(older + "shm_direct_scale = 0\n", "x"), model::ModelFileError);
  CHECK_THROWS_AS(model::parse_model(text + "mpi_scale = 2\n", "x"), model::ModelFileError);  // twice
  CHECK_THROWS_AS(model::parse_model(text + "shm_direct_scale = 2\n", "x"), model::ModelFileError);
}

TEST_CASE("--network text") {
  std::string why;
  const auto link = parse_network("400Gb/s,2us", why);
  REQUIRE(link.has_value());
  CHECK(link->alpha == doctest::Approx(2e-6));
  CHECK(link->beta == doctest::Approx(1 / 50e9));
  CHECK_FALSE(parse_network("400,2us", why).has_value());
  CHECK_FALSE(parse_network("400Gb/s", why).has_value());
}
