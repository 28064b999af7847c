// strata-tune's driver: parses the command line, then one of three modes.
// tune (default): measure the candidate plans over the sizes, write the
// spec file after every size (so an interrupted run keeps what it
// measured), then verify the tuned spec against the best fixed plans.
// --calibrate: measure the cost model's parameters, write the .model file.
// --project: the model's prediction for a larger cluster (no measurement).
#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "calibrate.hpp"
#include "command_line.hpp"
#include "candidates.hpp"
#include "layout.hpp"
#include "strata/cost_model.hpp"
#include "options.hpp"
#include "project.hpp"
#include "report.hpp"
#include "spec_file.hpp"
#include "stop.hpp"
#include "strata/strata.hpp"
#include "sweep.hpp"
#include "verify.hpp"

namespace tune {
namespace {

// Exit statuses (also in --help and docs/SCALING.md).
constexpr int kExitVerifyMissed = 1, kExitUsage = 2, kExitError = 3;

struct World {
  int rank = 0;
};

// Collective: every rank learns whether rank 0's `ok` held.
bool rank0_ok(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v != 0;
}

std::string broadcast_text(std::string text) {
  unsigned long long n = text.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  text.resize(n);
  MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return file ? text.str() : "";
}

std::string command_line(int argc, char** argv) {
  std::string text = "strata-tune";
  for (int i = 1; i < argc; ++i) text += std::string(" ") + argv[i];
  return text;
}

// The node's parameters for --project and --model: the file asked for, else
// strata.model if it exists. Throws UsageError when there is none.
model::Machine model_for(const Options& o) {
  const std::string path = !o.model_path.empty() ? o.model_path : o.model_output;
  if (o.model_path.empty() && access(path.c_str(), R_OK) != 0)
    throw UsageError(fmt::format("no model: pass --model FILE, or run --calibrate first (it writes {})", path));
  try {
    return model::read_model_file(path);
  } catch (const model::ModelFileError& e) {
    throw UsageError(e.what());
  }
}

int run_project(const Options& o, const World& w) {
  if (w.rank != 0) return 0;
  std::string why;
  const auto network = parse_network(o.network, why);
  if (!network) throw UsageError(fmt::format("--network = '{}': {}", o.network, why));
  model::Machine machine = model_for(o);
  machine.inter = *network;
  const std::vector<std::string> plans = o.plans.empty() ? projection_plans() : o.plans;
  const auto rows = project(machine, plans, o.ranks_per_node, o.min_nodes, o.max_nodes, o.project_bytes);
  std::fputs(fmt::format("# projection: {} ranks per node, {} .. {} nodes, network {} (alpha {:.2f} us, {:.1f} GB/s);"
                         " node parameters from {}\n",
                         o.ranks_per_node, o.min_nodes, o.max_nodes, o.network, network->alpha * 1e6,
                         1e-9 / network->beta, o.model_path.empty() ? o.model_output : o.model_path)
                 .c_str(),
             stdout);
  std::fputs(projection_report(rows, plans).c_str(), stdout);
  if (!o.csv_path.empty())
    if (auto error = write_file(o.csv_path, projection_csv(rows)); !error.empty()) {
      std::fprintf(stderr, "strata-tune: %s\n", error.c_str());
      return kExitError;
    }
  return 0;
}

int run_calibrate(const Options& o, const World& w, const std::string& command) {
  const Calibration c = calibrate(MPI_COMM_WORLD);
  std::string error;
  if (w.rank == 0) {
    const Evidence e = local_evidence();
    const std::string comments = fmt::format(
        "strata-tune cost model (alpha-beta-gamma, docs/SCALING.md): alpha us per message, beta and gamma ns per byte\n"
        "machine: {} ({})\ndate: {}\nstrata: {}\ncommand: {}\n{}",
        e.hostname, e.cpu_model, e.date, strata::version, command, c.notes);
    const std::string text = model::model_text(c.machine, comments);
    std::fputs(text.c_str(), stdout);
    error = write_file(o.model_output, text);
    if (!error.empty()) std::fprintf(stderr, "strata-tune: %s\n", error.c_str());
  }
  return rank0_ok(error.empty()) ? 0 : kExitError;  // every rank exits alike
}

int run_tune(const Options& o, const World& w, const std::string& command) {
  strata::Communicator world(MPI_COMM_WORLD);
  const Layout layout = layout_of(world.topology());
  std::optional<model::Machine> machine;
  if (!o.model_path.empty()) {
    std::string why;
    if (w.rank == 0) try {
        machine = model_for(o);
      } catch (const UsageError& e) {
        why = e.what();
      }
    if (!rank0_ok(why.empty())) throw UsageError(why.empty() ? "--model cannot be read" : why);
  }
  const std::vector<std::string> plans =
      !o.plans.empty() ? o.plans : candidate_plans(layout.shape.nodes, layout.shape.ranks_per_node, o.shards, o.every_intra);
  std::vector<Candidate> candidates;
  for (const std::string& plan : plans) try {
      candidates.push_back({plan, std::make_unique<strata::Communicator>(
                                      MPI_COMM_WORLD, strata::Config{.all_reduce_spec = plan})});
    } catch (const strata::InvalidArgument& e) {
      throw UsageError(fmt::format("--plans: '{}': {}", plan, e.what()));
    }

  SweepSettings settings;
  settings.sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);
  settings.iters = o.iters;
  settings.min_iters = o.min_iters;
  settings.warmup = o.warmup;
  settings.progress = o.progress;
  // The verification runs two plans per size where the sweep runs them
  // all: it gets that share of the budget.
  const double sweep_share = o.verify ? double(plans.size()) / double(plans.size() + 2) : 1.0;
  settings.budget_seconds = o.budget_seconds * sweep_share;

  Evidence evidence;
  if (w.rank == 0) {
    evidence = local_evidence();
    evidence.ranks = layout.ranks;
    evidence.nodes = layout.shape.nodes;
    evidence.ranks_per_node = layout.ranks_per_node_text();
    evidence.virtual_nodes = layout.virtual_nodes;
    evidence.command = command;
    evidence.warmup = o.warmup;
    evidence.tie = o.tie;
  }
  Workload workload(o.max_bytes);
  std::string write_error;
  bool written = false;
  SweepResult result = run_sweep(MPI_COMM_WORLD, candidates, workload, settings, [&](const SweepResult& partial) {
    if (w.rank != 0 || !write_error.empty()) return;
    write_error = write_file(o.output, spec_file_text(evidence, partial, plans, settings.sizes.size(), false));
    written = write_error.empty();
  });
  int status = 0;
  if (w.rank == 0) {
    // Rewritten once more, first (an interrupted run may have a second
    // left): the last size's file did not yet know the run was complete or cut short.
    if (written && write_error.empty())
      write_error = write_file(o.output, spec_file_text(evidence, result, plans, settings.sizes.size(), true));
    std::fputs(sweep_table(result, plans, machine, layout.shape, layout.ranks).c_str(), stdout);
    if (!o.csv_path.empty() && write_error.empty()) write_error = write_file(o.csv_path, sweep_csv(result, plans, machine, layout.shape));
    std::printf("# tuning: %zu plans x %zu sizes measured in %.1f s\n", plans.size(), result.sizes.size(), result.seconds);
    std::fflush(stdout);
    if (!write_error.empty()) std::fprintf(stderr, "strata-tune: %s\n", write_error.c_str());
  }
  if (!rank0_ok(write_error.empty())) return kExitError;
  written = rank0_ok(written);
  if (result.interrupted) {
    if (w.rank == 0)
      std::fprintf(stderr, "strata-tune: interrupted (%s) after %zu of %zu sizes: %s\n",
                   stop::signal_seen() == SIGTERM ? "SIGTERM" : "SIGINT", result.sizes.size(), settings.sizes.size(),
                   written ? fmt::format("{} holds the sizes measured", o.output).c_str()
                           : "nothing was measured in full, no spec file written");
    return stop::kExitInterrupted;
  }
  if (!written) {
    if (w.rank == 0) std::fprintf(stderr, "strata-tune: no size fitted the budget: no spec file written\n");
    return kExitError;
  }
  if (!o.verify) return status;
  // What the library will run: the file read back, as STRATA_SPEC_FILE reads it.
  std::string spec = broadcast_text(w.rank == 0 ? spec_of_file_text(read_text(o.output)) : "");
  const double verify_start = MPI_Wtime();
  const bool budgeted = o.budget_seconds > 0;
  auto rows = verify(MPI_COMM_WORLD, spec, result, candidates, workload, o.warmup, o.iters, budgeted);
  if (!verify_met(rows)) {
    // Re-check the choices behind the misses on more samples, rewrite the
    // file from them and verify what changed; the first table stays on record.
    const std::vector<Contest> rechecked =
        recheck(MPI_COMM_WORLD, spec, rows, result, candidates, workload, o.warmup, o.iters, budgeted);
    if (!rechecked.empty()) {
      if (w.rank == 0) {
        std::fputs(verify_report(rows).c_str(), stdout);
        std::printf("# re-check: %zu size(s) where the spec ran another plan than the best were timed again; "
                    "%s rewritten from those times; the sizes re-timed or given another plan verified again\n",
                    rechecked.size(), o.output.c_str());
        write_error = write_file(o.output, spec_file_text(evidence, result, plans, settings.sizes.size(), true));
        if (!write_error.empty()) std::fprintf(stderr, "strata-tune: %s\n", write_error.c_str());
      }
      if (!rank0_ok(write_error.empty())) return kExitError;
      const std::string first_spec = spec;
      spec = broadcast_text(w.rank == 0 ? spec_of_file_text(read_text(o.output)) : "");
      rows = verify_again(MPI_COMM_WORLD, first_spec, spec, rechecked, rows, result, candidates, workload, o.warmup,
                          o.iters, budgeted);
    }
  }
  if (w.rank == 0) {
    std::fputs(verify_report(rows).c_str(), stdout);
    std::printf("# verification took %.1f s\n", MPI_Wtime() - verify_start);
  }
  return verify_met(rows) ? 0 : kExitVerifyMissed;
}

}  // namespace
}  // namespace tune

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  tune::stop::install();  // after MPI_Init: MPI may install handlers of its own
  tune::World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  // A UsageError is raised alike on every rank (same arguments, or rank 0's
  // verdict broadcast); anything else may be on one rank: abort the job.
  const int status =
      strata_apps::run_mpi_app<tune::UsageError>("strata-tune", w.rank, tune::kExitUsage, tune::kExitError, [&] {
        std::string help;
        const auto options = tune::parse_options(argc, argv, &help);
        if (!options) {
          if (w.rank == 0) std::fputs(help.c_str(), stdout);
          return 0;
        }
        if (options->mode == tune::Mode::project) return tune::run_project(*options, w);
        if (options->mode == tune::Mode::calibrate)
          return tune::run_calibrate(*options, w, tune::command_line(argc, argv));
        return tune::run_tune(*options, w, tune::command_line(argc, argv));
      });
  MPI_Finalize();
  return status;
}
