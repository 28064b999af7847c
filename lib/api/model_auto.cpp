#include "api/model_auto.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "exec/registry.hpp"
#include "strata/cost_model.hpp"
#include "util/check.hpp"
#include "util/log.hpp"
#include "util/where.hpp"

namespace strata::api {
namespace {

// The model replaces a plan of the fixed table only where it predicts the
// replacement more than 10% faster: the table rests on measurements, and
// smaller predicted gains are within the model's error (docs/SCALING.md,
// "auto from the cost model", has the measurements behind the 10%).
constexpr double kOverrideMargin = 0.10;

const char* model_file() {
  const char* path = std::getenv("STRATA_MODEL_FILE");
  return path && *path ? path : nullptr;
}

// Rank 0's verdict and text to every rank: (ok, spec) or (failed, message).
std::pair<bool, std::string> broadcast_verdict(MPI_Comm comm, bool ok, std::string text) {
  unsigned long long header[2] = {ok ? 1ULL : 0ULL, text.size()};
  STRATA_CHECK_MPI(MPI_Bcast(header, 2, MPI_UNSIGNED_LONG_LONG, 0, comm));
  text.resize(header[1]);
  STRATA_CHECK_MPI(MPI_Bcast(text.data(), static_cast<int>(header[1]), MPI_CHAR, 0, comm));
  return {header[0] != 0, text};
}

}  // namespace

bool model_auto_wanted(const plan::Spec& spec) { return spec.is_auto() && model_file() != nullptr; }

std::shared_ptr<const plan::Spec> modelled_all_reduce(MPI_Comm comm, int rank, const Topology& topology,
                                                     const plan::Spec& incumbent) {
  const char* path = model_file();
  const model::Shape shape = model::shape_of(topology);
  bool ok = true;
  std::string text;
  if (rank == 0) try {
      const model::Machine machine = model::read_model_file(path);  // read on one node too: a bad file is an error
      if (shape.nodes > 1 && shape.oversubscription <= 1)
        text = model::spec_from_model(machine, shape, AllReduceSpec(incumbent.to_string()), kOverrideMargin);
    } catch (const std::exception& e) {  // every rank must hear of it, or the others wait in the broadcast
      ok = false;
      text = e.what();
    }
  const auto [agreed, spec_or_why] = broadcast_verdict(comm, ok, std::move(text));
  if (!agreed)
    throw InvalidArgument(util::located(
        fmt::format("STRATA_MODEL_FILE, as rank 0 reads it: {}; name a file `strata-tune --calibrate` wrote, "
                    "or unset it for auto's fixed tables",
                    spec_or_why)));
  if (spec_or_why.empty()) {
    if (rank == 0)
      util::log(util::LogLevel::info,
                "STRATA_MODEL_FILE '{}': {}, so auto keeps its measured table (the cost model picks plans for "
                "several nodes with a core per rank only)",
                path, shape.nodes == 1 ? "one node" : "ranks outnumber cores");
    return nullptr;
  }
  if (rank == 0) {
    util::log(util::LogLevel::info, "auto from the cost model in '{}' on {} nodes of {} rank(s): {}", path,
              shape.nodes, shape.ranks_per_node, spec_or_why);
    static bool warned = false;  // once per process, not per communicator
    if (!warned) {
      warned = true;
      util::log(util::LogLevel::warn,
                "all-reduce plans come from the cost model in '{}' (STRATA_MODEL_FILE), which is not validated "
                "for this layout ({} nodes of {} rank(s)): `strata-tune --model {}` measures its error here, "
                "and plain `strata-tune` writes a measured spec for STRATA_SPEC_FILE (docs/SCALING.md)",
                path, shape.nodes, shape.ranks_per_node, path);
    }
  }
  return std::make_shared<const plan::Spec>(plan::parse_spec(spec_or_why, exec::catalogue()));
}

}  // namespace strata::api
