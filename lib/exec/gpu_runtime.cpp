#include "exec/gpu_runtime.hpp"

#include <fmt/format.h>

#include <utility>

#include "exec/registry.hpp"
#include "gpu/plugin.hpp"
#include "util/agree.hpp"
#include "util/deadline.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::exec {

GpuRuntime::GpuRuntime(std::vector<topo::GpuRow> rows, topo::GpuPlane plane)
    : rows_(std::move(rows)), plane_(std::move(plane)) {}

gpu::Backend& GpuRuntime::backend(MPI_Comm comm, const topo::NodeSplit& split, int rank) {
  if (backend_) return *backend_;
  if (!plane_.unavailable.empty())
    throw Unavailable(util::located(fmt::format(
        "CUDA tensors are unavailable on this communicator: {}; pass host memory", plane_.unavailable)));
  // Local creation (device, stream), then every rank learns every rank's outcome.
  util::Agreement step(comm, "creating the GPU backend", util::Deadline(topo::setup_seconds()));
  std::unique_ptr<gpu::Backend> made;
  try {
    made = gpu::make_backend(comm, split, rows_[static_cast<std::size_t>(rank)].device, rows_);
  } catch (const Unavailable& e) {
    step.fail(util::Agreement::Kind::unavailable, e.what());
  } catch (const Error& e) {
    step.fail(util::Agreement::Kind::backend, e.what());
  }
  step.throw_if_failed();
  backend_ = std::move(made);
  levels_ = std::make_unique<gpu::Levels>(*backend_);
  return *backend_;
}

bool GpuRuntime::ready_for(const plan::Choice& choice, const topo::NodeSplit& split) const {
  if (!backend_ || !levels_) return false;
  const auto made = [&](const plan::Algorithm& algorithm, plan::Group group) {
    const Entry& entry = entry_of(algorithm);
    return levels_->made(entry.gpu ? static_cast<const void*>(entry.gpu) : entry.host, group);
  };
  if (choice.shape != plan::Shape::hierarchical) return made(*choice.algorithm, plan::Group::world);
  return made(*choice.algorithm, plan::Group::node) &&
         (split.cross == MPI_COMM_NULL || made(*choice.cross, plan::Group::cross));
}

GpuContext GpuRuntime::context(const topo::NodeSplit& split, int rank, int size) {
  return {backend_.get(), levels_.get(), &split, &plane_, rank, size};
}

void GpuRuntime::reset() noexcept {
  levels_.reset();
  backend_.reset();
}

}  // namespace strata::exec
