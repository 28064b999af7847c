// Every GPU algorithm x op x dtype through the backend seam against a host
// reference, and identical bits on every rank. Run under mpirun with
// STRATA_RANKS_PER_NODE (virtual nodes), so hierarchical paths run even with
// one GPU; NCCL communicators that would put two ranks on one GPU are
// refused by the backend with Unavailable, which this test reports as a
// skipped case. Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "util/half.hpp"
#include "gpu_test.hpp"
#include "host/reduce_kernel.hpp"
#include "strata/errors.hpp"
#include "exec/execute.hpp"
#include "exec/registry.hpp"
#include "plan/choose.hpp"
#include "topo/discover.hpp"
#include "topo/node_split.hpp"

using namespace strata;

namespace {

// Small integers in every dtype: sums, products and means are exact and
// independent of the reduction order, so any correct algorithm matches.
std::vector<std::byte> make_input(DataType dtype, std::size_t count, int rank) {
  const std::size_t e = dtype_size(dtype);
  std::vector<std::byte> bytes(count * e);
  for (std::size_t i = 0; i < count; ++i) {
    const int v = int((i * 7 + std::size_t(rank) * 3) % 5) - 2;
    std::byte* at = bytes.data() + i * e;
    const float f = float(v);
    const double d = double(v);
    const long long l = v;
    switch (dtype) {
      case DataType::f32: std::memcpy(at, &f, e); break;
      case DataType::f64: std::memcpy(at, &d, e); break;
      case DataType::f16: { const auto h = util::f32_to_f16(f); std::memcpy(at, &h, e); break; }
      case DataType::bf16: { const auto h = util::f32_to_bf16(f); std::memcpy(at, &h, e); break; }
      default: std::memcpy(at, &l, e); break;  // little-endian truncation = wrap
    }
  }
  return bytes;
}

std::uint64_t fnv(const std::vector<std::byte>& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte b : bytes) h = (h ^ std::uint64_t(b)) * 1099511628211ull;
  return h;
}

// What the planner makes of `spelled` for one call (the same resolution the
// Communicator does): the name the backend runs and the host algorithm of a
// staged level.
struct Planned {
  std::string name;
  int shards = 1;
  const host::Algorithm* host_algorithm = nullptr;
};
Planned plan_for(const char* spelled, Collective collective, std::size_t bytes, const topo::NodeSplit& split) {
  const plan::Spec spec = plan::parse_spec(spelled, exec::catalogue());
  const plan::Choice choice = plan::choose(exec::catalogue(), spec, collective, bytes, Implementation::automatic,
                                           Memory::cuda, {split.node_count, split.local_size});
  return {choice.name(), choice.shards, exec::staged_level(choice)};
}

}  // namespace

int main(int argc, char** argv) {
  gpu_test::skip_without_device("test_gpu_collectives");
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  topo::NodeSplit split = topo::split_nodes(MPI_COMM_WORLD);
  int failures = 0, cases = 0, skipped = 0;
  {
    // The device topology discovery assigns (with virtual nodes on one GPU,
    // every rank gets device 0).
    const Topology topology = topo::discover(MPI_COMM_WORLD, split, gpu::visible_devices());
    auto backend = gpu::make_backend(MPI_COMM_WORLD, split, topology.ranks[std::size_t(rank)].gpu.cuda_device);
    const char* algorithms[] = {"nccl",       "psgpu",       "psgpu#2",     "nccl/nccl", "nccl/xring",
                                "nccl/rechd", "nccl/pscpu",  "psgpu/xring", "psgpu/pscpu", "xring"};
    const DataType dtypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                               DataType::u8,  DataType::i32, DataType::u32, DataType::i64,  DataType::u64};
    const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
    for (const char* spelled : algorithms) {
      bool unavailable = false;
      for (DataType dtype : dtypes)
        for (ReduceOp op : ops)
          for (std::size_t count : {std::size_t(5), std::size_t(4099), std::size_t(300001)}) {
            if (unavailable) continue;
            const std::size_t e = dtype_size(dtype), bytes = count * e;
            // Reference: host reduction in rank order, then mean's division.
            std::vector<std::byte> want = make_input(dtype, count, 0);
            for (int r = 1; r < size; ++r) {
              const auto other = make_input(dtype, count, r);
              host::reduce_into(want.data(), want.data(), other.data(), count, dtype,
                                op == ReduceOp::mean ? ReduceOp::sum : op);
            }
            if (op == ReduceOp::mean) host::divide_by(want.data(), count, dtype, std::size_t(size));
            const auto input = make_input(dtype, count, rank);
            void *din = nullptr, *dout = nullptr;
            cudaMalloc(&din, bytes);
            cudaMalloc(&dout, bytes);
            cudaMemcpy(din, input.data(), bytes, cudaMemcpyHostToDevice);
            const Planned planned = plan_for(spelled, Collective::all_reduce, bytes, split);
            for (int in_place = 0; in_place < 2; ++in_place) {
              gpu::GpuJob job;
              job.in = din;
              job.out = in_place ? din : dout;
              job.count = count;
              job.dtype = dtype;
              job.op = op;
              job.contributors = std::size_t(size);
              job.algorithm = planned.name;
              job.host_algorithm = planned.host_algorithm;
              job.shards = planned.shards;
              job.sequence = std::uint64_t(++cases);
              try {
                backend->all_reduce(job, util::Deadline(120));
              } catch (const Unavailable& ex) {
                if (rank == 0) std::printf("skip %s: %s\n", spelled, ex.what());
                unavailable = true;
                ++skipped;
                break;
              }
              std::vector<std::byte> got(bytes);
              cudaMemcpy(got.data(), job.out, bytes, cudaMemcpyDeviceToHost);
              std::uint64_t mine = fnv(got), first = mine;
              MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
              const bool ok = got == want && mine == first;
              int all_ok = ok;
              MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
              if (!ok)
                std::printf("FAIL on rank %d: %s %s %s count %zu %s: %s\n", rank, spelled,
                            std::string(to_string(dtype)).c_str(), std::string(to_string(op)).c_str(), count,
                            in_place ? "in place" : "out of place",
                            got != want ? "differs from the host reference" : "differs from rank 0");
              if (!all_ok) ++failures;
              cudaMemcpy(din, input.data(), bytes, cudaMemcpyHostToDevice);
            }
            cudaFree(din);
            cudaFree(dout);
          }
    }
    // Broadcast and reduce on the flat paths.
    for (const char* name : {"nccl", "psgpu", "xring"}) {
      const std::size_t count = 100003, bytes = count * 4;
      auto input = make_input(DataType::i32, count, rank);
      const auto root_data = make_input(DataType::i32, count, size - 1);
      void* d = nullptr;
      cudaMalloc(&d, bytes);
      cudaMemcpy(d, input.data(), bytes, cudaMemcpyHostToDevice);
      gpu::GpuJob job;
      job.in = job.out = d;
      job.count = count;
      job.dtype = DataType::i32;
      job.root = size - 1;
      const Planned planned = plan_for(name, Collective::broadcast, bytes, split);
      job.algorithm = planned.name;
      job.host_algorithm = planned.host_algorithm;
      try {
        backend->broadcast(job, util::Deadline(120));
        std::vector<std::byte> got(bytes);
        cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost);
        if (got != root_data) ++failures, std::printf("FAIL on rank %d: broadcast %s\n", rank, name);
      } catch (const Unavailable& ex) {
        ++skipped;
        if (rank == 0) std::printf("skip broadcast %s: %s\n", name, ex.what());
      }
      cudaFree(d);
    }
  }
  topo::free_split(split);
  if (rank == 0) std::printf("%d cases, %d failing, %d algorithms skipped (Unavailable)\n", cases, failures, skipped);
  MPI_Finalize();
  return failures ? 1 : 0;
}
