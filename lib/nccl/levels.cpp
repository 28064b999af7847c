#include "nccl/levels.hpp"

#include <algorithm>

#include "cuda/check.hpp"
#include "nccl/algorithms.hpp"
#include "plan/nan.hpp"
#include "strata/errors.hpp"
#include "util/check.hpp"

namespace strata::nccl {
namespace {

int size_of(MPI_Comm comm) {
  int size = 1;
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));
  return size;
}

int rank_of(MPI_Comm comm) {
  int rank = 0;
  STRATA_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  return rank;
}

// What every GPU level shares: the engine, the group, and the local copy.
class GpuLevel : public plan::Level {
 public:
  GpuLevel(Engine& engine, plan::Group group)
      : e_(engine), mpi_(engine.mpi(group)), rank_(rank_of(mpi_)), size_(size_of(mpi_)) {}

  void copy(const plan::Job& job) override {
    if (job.out != job.in && job.out)
      STRATA_CHECK_CUDA(
          cudaMemcpyAsync(job.out, job.in, job.bytes(), cudaMemcpyDeviceToDevice, e_.stream()));
  }

 protected:
  Engine& e_;
  MPI_Comm mpi_;
  int rank_;
  int size_;
};

class NcclLevel final : public GpuLevel {
 public:
  NcclLevel(Engine& engine, plan::Group group)
      : GpuLevel(engine, group), comm_(size_ > 1 ? &engine.nccl(group) : nullptr) {}

  void reduce_scatter(const plan::Job& job, int owners) override {
    if (!comm_) return copy(job);
    if (plan::nccl_reduces(job.op, job.dtype)) nccl_reduce_scatter(e_, *comm_, job, owners);
    else exchange_reduce_scatter(e_, *comm_, job, owners);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (comm_) nccl_all_gather(e_, *comm_, job, owners);
  }
  void all_reduce(const plan::Job& job) override {
    if (!comm_) return copy(job);
    if (plan::nccl_reduces(job.op, job.dtype)) return nccl_all_reduce(e_, *comm_, job);
    exchange_reduce_scatter(e_, *comm_, job, size_);
    nccl_all_gather(e_, *comm_, job, size_);
  }
  void reduce(const plan::Job& job) override {
    if (!comm_) return copy(job);
    if (plan::nccl_reduces(job.op, job.dtype)) return nccl_reduce(e_, *comm_, job);
    // Reduce-scatter into the root's out (scratch elsewhere), then every
    // owner's slice to the root.
    plan::Job whole = job;
    if (rank_ != job.root) whole.out = e_.device_scratch(1, job.bytes());
    exchange_reduce_scatter(e_, *comm_, whole, size_);
    gather_slices(e_, *comm_, whole, size_, job.root);
  }
  void broadcast(const plan::Job& job) override {
    if (comm_) nccl_broadcast(e_, *comm_, job);
  }

 private:
  Comm* comm_;
};

class PsgpuLevel final : public GpuLevel {
 public:
  using GpuLevel::GpuLevel;

  void reduce_scatter(const plan::Job& job, int owners) override {
    if (size_ == 1) return copy(job);
    psgpu_reduce_scatter(e_, mpi_, job, owners);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (size_ > 1) psgpu_all_gather(e_, mpi_, job, owners);
  }
  void all_reduce(const plan::Job& job) override {
    const int owners = job.shards >= 2 ? std::min(job.shards, size_) : size_;
    psgpu_reduce_scatter(e_, mpi_, job, owners);
    psgpu_all_gather(e_, mpi_, job, owners);
  }
  void reduce(const plan::Job& job) override {
    // All-reduce into scratch; the root keeps it.
    plan::Job whole = job;
    whole.out = e_.device_scratch(1, job.bytes());
    all_reduce(whole);
    if (rank_ == job.root)
      STRATA_CHECK_CUDA(
          cudaMemcpyAsync(job.out, whole.out, job.bytes(), cudaMemcpyDeviceToDevice, e_.stream()));
  }
  void broadcast(const plan::Job&) override {
    throw Unavailable("strata: internal error: psgpu has no broadcast (the planner runs the host default instead)");
  }
};

class StagedLevel final : public GpuLevel {
 public:
  StagedLevel(Engine& engine, const host::Algorithm& algorithm, plan::Group group)
      : GpuLevel(engine, group), algorithm_(algorithm) {}

  void reduce_scatter(const plan::Job& job, int owners) override {
    (void)owners;  // every member ends with the whole reduction, a superset of its slice
    if (size_ == 1) return copy(job);
    plan::Job whole = job;
    whole.shards = 1;
    staged(e_, mpi_, Collective::all_reduce, algorithm_, whole);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (size_ > 1) psgpu_all_gather(e_, mpi_, job, owners);
  }
  void all_reduce(const plan::Job& job) override { staged(e_, mpi_, Collective::all_reduce, algorithm_, job); }
  void reduce(const plan::Job& job) override { staged(e_, mpi_, Collective::reduce, algorithm_, job); }
  void broadcast(const plan::Job& job) override { staged(e_, mpi_, Collective::broadcast, algorithm_, job); }

 private:
  const host::Algorithm& algorithm_;
};

}  // namespace

std::unique_ptr<plan::Level> make_nccl_level(Engine& engine, plan::Group group) {
  return std::make_unique<NcclLevel>(engine, group);
}

std::unique_ptr<plan::Level> make_psgpu_level(Engine& engine, plan::Group group) {
  return std::make_unique<PsgpuLevel>(engine, group);
}

std::unique_ptr<plan::Level> make_staged_level(Engine& engine, const host::Algorithm& algorithm,
                                               plan::Group group) {
  return std::make_unique<StagedLevel>(engine, algorithm, group);
}

}  // namespace strata::nccl
