// hier_check: every hierarchical all_reduce_spec "a/b" must give exact,
// bit-identical results on every rank, on a (real or emulated) multi-node
// job.
//
// For a and b each registered host algorithm (strata::registered_algorithms,
// so that an algorithm added to lib/exec/algorithms.def is covered here
// without touching this file) it builds a Communicator with
// Config{.all_reduce_spec = "a/b"} (a spec rejected with InvalidArgument is
// reported and skipped), then all-reduces sizes 0, 1, 7, 1000, 65537 and
// 1M+3 elements of f32, i32 and f64 with sum, max and mean. Inputs are
// small integers, so the exact result is known in every dtype: each rank
// compares its output with the reference bit for bit, and the ranks
// compare 64-bit hashes of their outputs (MPI_Allgather) to prove they got
// identical bits.
//
//   hier_check [--expect-nodes N] [--expect-ranks-per-node K] [--quick]
//
// --expect-nodes / --expect-ranks-per-node: fail unless
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds N nodes of K ranks each
// (proves that an emulated cluster really separated the hosts). Without
// them the node layout is only printed (e.g. virtual nodes from
// STRATA_RANKS_PER_NODE on one machine). --quick drops the 1M+3 size.
//
// Exit status: 0 all passed, 1 any mismatch or error (the harness core's
// summary says on which ranks), 2 bad usage; a hang ends with 124 (its watchdog).
#include <mpi.h>

#include <strata/strata.hpp>

#include "harness_core.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// The registered algorithms of host memory, in registry order.
std::vector<std::string> host_algorithms() {
  std::vector<std::string> names;
  for (const strata::AlgorithmInfo& a : strata::registered_algorithms())
    if (a.memory == strata::Memory::host) names.push_back(a.name);
  return names;
}
constexpr std::size_t kSizes[] = {0, 1, 7, 1000, 65537, (1u << 20) + 3};
constexpr strata::DataType kTypes[] = {strata::DataType::f32, strata::DataType::i32, strata::DataType::f64};
constexpr strata::ReduceOp kOps[] = {strata::ReduceOp::sum, strata::ReduceOp::max, strata::ReduceOp::mean};

int g_rank = 0;
int g_size = 1;

// Small integers, different per rank and element, both signs; |v| <= 40, so
// any sum over up to 2^18 ranks is exact in f32.
int input_value(int rank, std::size_t i) {
  return static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13 + i / 97) % 81) - 40;
}

using strata::test::rank_check;

template <typename T>
T reference(strata::ReduceOp op, std::size_t i) {
  if (op == strata::ReduceOp::max) {
    int m = input_value(0, i);
    for (int r = 1; r < g_size; ++r) m = std::max(m, input_value(r, i));
    return static_cast<T>(m);
  }
  long long s = 0;
  for (int r = 0; r < g_size; ++r) s += input_value(r, i);
  const T sum = static_cast<T>(s);  // exact in every tested dtype
  if (op == strata::ReduceOp::sum) return sum;
  // mean: the sum divided by the number of ranks in the dtype itself
  // (integers truncate toward zero, as C++ division does).
  return static_cast<T>(sum / static_cast<T>(g_size));
}

struct Outcome {
  long long checked = 0;   // (spec, size, dtype, op) cases run
  long long failed = 0;    // cases with a wrong value or differing bits
  long long errors = 0;    // cases that threw
};

// Runs one case; returns true when this rank's result is exact. Fills `hash`.
template <typename T>
bool run_case(strata::Communicator& comm, std::size_t count, strata::DataType dtype, strata::ReduceOp op,
              std::uint64_t& hash, std::string& detail) {
  std::vector<T> in(count), out(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<T>(input_value(g_rank, i));
  // Poison the output so an untouched buffer cannot pass. (An empty
  // vector's data() may be null, and memset on null is undefined even for
  // 0 bytes: UBSan's nonnull-attribute check.)
  if (count > 0) std::memset(out.data(), 0xA5, count * sizeof(T));
  comm.all_reduce({in.data(), count, dtype}, {out.data(), count, dtype}, op, {.timeout_seconds = 120});
  hash = strata::test::hash_bytes(out.data(), count * sizeof(T));
  for (std::size_t i = 0; i < count; ++i) {
    const T want = reference<T>(op, i);
    if (std::memcmp(&want, &out[i], sizeof(T)) != 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: got %.17g, want %.17g", i, static_cast<double>(out[i]),
                    static_cast<double>(want));
      detail = buf;
      return false;
    }
  }
  return true;
}

// Collective: every rank must call it with the same arguments.
void check_case(strata::Communicator& comm, const std::string& spec, std::size_t count, strata::DataType dtype,
                strata::ReduceOp op, Outcome& outcome) {
  std::uint64_t hash = 0;
  std::string detail;
  int ok = 1, threw = 0;
  try {
    switch (dtype) {
      case strata::DataType::f32: ok = run_case<float>(comm, count, dtype, op, hash, detail); break;
      case strata::DataType::i32: ok = run_case<std::int32_t>(comm, count, dtype, op, hash, detail); break;
      case strata::DataType::f64: ok = run_case<double>(comm, count, dtype, op, hash, detail); break;
      default: ok = 0; detail = "untested dtype"; break;
    }
  } catch (const std::exception& e) {
    ok = 0;
    threw = 1;
    detail = std::string("threw: ") + e.what();
  }
  // Compare bits across ranks. (After a throw on one rank the others may be
  // stuck inside the collective; the timeout above bounds that, and the
  // communicator then refuses further calls, which we report too.)
  const std::string label = spec + " count=" + std::to_string(count) + " " +
                            std::string(strata::to_string(dtype)) + " " + std::string(strata::to_string(op));
  const bool identical = strata::test::same_on_all_ranks(MPI_COMM_WORLD, hash);
  rank_check(ok, label + ": " + detail);
  if (g_rank == 0) rank_check(identical, label + ": ranks got different bits");
  int local_bad[2] = {ok ? 0 : 1, threw}, bad[2] = {0, 0};
  MPI_Allreduce(local_bad, bad, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ++outcome.checked;
  if (bad[0] || !identical) ++outcome.failed;
  if (bad[1]) ++outcome.errors;
}

struct Layout {
  int nodes = 0;
  int min_per_node = 0;
  int max_per_node = 0;
  std::string hosts;  // hostname of each node's lowest rank
};

Layout shared_memory_layout() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  int local_rank = 0, local_size = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  Layout l;
  int leader = local_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &l.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &l.min_per_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &l.max_per_node, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(g_size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<int> leaders(static_cast<std::size_t>(g_size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < g_size; ++r) {
    if (!leaders[static_cast<std::size_t>(r)]) continue;
    if (!l.hosts.empty()) l.hosts += ", ";
    l.hosts += &all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME];
  }
  return l;
}

int parse_int(const char* flag, const char* text) {
  char* end = nullptr;
  const long v = std::strtol(text ? text : "", &end, 10);
  if (!text || *end || v < 1 || v > 1 << 20) {
    if (g_rank == 0) std::fprintf(stderr, "hier_check: %s needs a positive integer, got '%s'\n", flag, text ? text : "");
    MPI_Finalize();
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  strata::test::start_program_checks("hier_check", 280);
  g_rank = strata::test::world_rank();
  g_size = strata::test::world_size();

  int expect_nodes = 0, expect_per_node = 0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--expect-nodes") expect_nodes = parse_int(argv[i++], value);
    else if (a == "--expect-ranks-per-node") expect_per_node = parse_int(argv[i++], value);
    else if (a == "--quick") quick = true;
    else {
      if (g_rank == 0)
        std::fprintf(stderr, "usage: hier_check [--expect-nodes N] [--expect-ranks-per-node K] [--quick]\n");
      MPI_Finalize();
      return 2;
    }
  }

  const Layout layout = shared_memory_layout();
  const char* virtual_k = std::getenv("STRATA_RANKS_PER_NODE");
  if (g_rank == 0) {
    std::printf("hier_check: %d ranks; MPI_COMM_TYPE_SHARED: %d node(s) of %d..%d ranks [%s]", g_size, layout.nodes,
                layout.min_per_node, layout.max_per_node, layout.hosts.c_str());
    if (virtual_k) std::printf("; STRATA_RANKS_PER_NODE=%s (virtual nodes)", virtual_k);
    std::printf("\n");
  }
  rank_check(!(expect_nodes && layout.nodes != expect_nodes) &&
                   !(expect_per_node && (layout.min_per_node != expect_per_node || layout.max_per_node != expect_per_node)),
               "expected " + std::to_string(expect_nodes) + " node(s) of " + std::to_string(expect_per_node) +
                   " ranks from MPI_COMM_TYPE_SHARED, found " + std::to_string(layout.nodes) + " of " +
                   std::to_string(layout.min_per_node) + ".." + std::to_string(layout.max_per_node) +
                   "; the hosts were not separated");

  Outcome total;
  int specs_run = 0, specs_skipped = 0, specs_failed = 0;
  std::string skipped, failed;
  const std::vector<std::string> algorithms = host_algorithms();
  for (const std::string& a : algorithms) {
    for (const std::string& b : algorithms) {
      const std::string spec = a + "/" + b;
      strata::Communicator* comm = nullptr;
      std::string rejected;
      try {
        comm = new strata::Communicator(MPI_COMM_WORLD, strata::Config{.all_reduce_spec = spec});
      } catch (const strata::InvalidArgument& e) {
        rejected = e.what();
      }
      // Every rank parses the same spec, so all of them agree; check anyway
      // so that a disagreement cannot deadlock the next collective.
      int local_rejected = rejected.empty() ? 0 : 1, any_rejected = 0, all_rejected = 0;
      MPI_Allreduce(&local_rejected, &any_rejected, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&local_rejected, &all_rejected, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (any_rejected != all_rejected) {
        if (g_rank == 0) std::fprintf(stderr, "hier_check: FAIL: ranks disagree whether '%s' is valid\n", spec.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (any_rejected) {
        ++specs_skipped;
        skipped += (skipped.empty() ? "" : " ") + spec;
        if (g_rank == 0) std::printf("  %-12s skipped: %s\n", spec.c_str(), rejected.c_str());
        continue;
      }
      Outcome o;
      const double t0 = MPI_Wtime();
      for (std::size_t count : kSizes) {
        if (quick && count > (1u << 20)) continue;
        for (auto dtype : kTypes)
          for (auto op : kOps) check_case(*comm, spec, count, dtype, op, o);
      }
      const double seconds = MPI_Wtime() - t0;
      delete comm;
      ++specs_run;
      if (o.failed) {
        ++specs_failed;
        failed += (failed.empty() ? "" : " ") + spec;
      }
      if (g_rank == 0)
        std::printf("  %-12s %3lld cases  %s  (%.2f s)\n", spec.c_str(), o.checked,
                    o.failed ? (std::to_string(o.failed) + " FAILED" + (o.errors ? " (" + std::to_string(o.errors) + " threw)" : "")).c_str()
                             : "ok, exact and identical on all ranks",
                    seconds);
      std::fflush(stdout);
      total.checked += o.checked;
      total.failed += o.failed;
      total.errors += o.errors;
    }
  }
  rank_check(specs_run > 0, "no spec was accepted");
  if (g_rank == 0) {
    std::printf("hier_check summary: %d specs run, %d skipped (rejected), %d failed; %lld cases, %lld failed\n",
                specs_run, specs_skipped, specs_failed, total.checked, total.failed);
    if (!skipped.empty()) std::printf("  skipped: %s\n", skipped.c_str());
    if (!failed.empty()) std::printf("  FAILED: %s\n", failed.c_str());
  }
  std::fflush(stdout);
  const int status = strata::test::finish_program_checks();
  MPI_Finalize();
  return status;
}
