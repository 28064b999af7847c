// CUDA batches and several GPUs per rank through the public API:
//   - Communicator::batch_all_reduce on CUDA tensors of two dtypes with
//     automatic packing, num_packs and bytes_per_pack: results equal a host
//     reference, identical on every rank, on_pack_done once per pack in order;
//   - MultiWorkerAllReduce with 2 replicas per rank (on the rank's device
//     and the next, or both on one device with one GPU), 4 replicas where
//     the process sees 4 devices, and a TensorFlow-style list starting at
//     device 0 (replica 0 off the rank's own device), for several
//     algorithms: reduce to all ranks and to one rank (others untouched),
//     mean over ranks x replicas, and broadcast to all and to one rank.
// Data are small integers, so every reduction order gives the same exact
// result. Uploads are pageable cudaMemcpy on the legacy default stream,
// which strata's work follows by default (CommunicationOptions::stream).
// The communicator's default spec ("auto") follows the GPU control plane,
// so it must pass in every layout; an explicit spec whose NCCL levels the
// plane refuses here (ranks sharing a GPU) raises Unavailable on every
// rank, which is reported with its reason and counted as skipped. Exits 77
// without a device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "strata/strata.hpp"

using namespace strata;

namespace {

int failures = 0, skipped = 0, cases = 0;
int rank = 0, size = 1;

// Element i of tensor k, replica r, on rank q.
int value(std::size_t i, std::size_t k, int q, int r) { return int((i * 7 + k * 5 + std::size_t(q) * 3 + std::size_t(r) * 11) % 5) - 2; }

std::vector<std::byte> host_values(DataType dtype, std::size_t count, std::size_t k, int q, int r) {
  std::vector<std::byte> out(count * dtype_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == DataType::f32) {
      const float f = float(value(i, k, q, r));
      std::memcpy(out.data() + i * 4, &f, 4);
    } else {
      const std::int32_t v = value(i, k, q, r);
      std::memcpy(out.data() + i * 4, &v, 4);
    }
  }
  return out;
}

// Sum (or mean) over ranks and replicas; f32 and i32 only.
std::vector<std::byte> reference(DataType dtype, std::size_t count, std::size_t k, int replicas, bool mean) {
  std::vector<std::byte> out(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    long long sum = 0;
    for (int q = 0; q < size; ++q)
      for (int r = 0; r < replicas; ++r) sum += value(i, k, q, r);
    if (dtype == DataType::f32) {
      const float f = mean ? float(sum) / float(size * replicas) : float(sum);
      std::memcpy(out.data() + i * 4, &f, 4);
    } else {
      const std::int32_t v = std::int32_t(mean ? sum / (size * replicas) : sum);
      std::memcpy(out.data() + i * 4, &v, 4);
    }
  }
  return out;
}

struct DeviceTensor {
  Tensor t;
  DeviceTensor(DataType dtype, std::size_t count, int device) {
    cudaSetDevice(device);
    t.count = count, t.dtype = dtype, t.memory = Memory::cuda, t.device = device;
    cudaMalloc(&t.data, count * dtype_size(dtype) + 16);
  }
  ~DeviceTensor() { cudaFree(t.data); }
  void upload(const std::vector<std::byte>& bytes) { cudaMemcpy(t.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice); }
  std::vector<std::byte> download() const {
    std::vector<std::byte> bytes(t.bytes());
    cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost);
    return bytes;
  }
};

// Every rank agrees on `ok` (and on bits where asked); one failure line per case.
void verdict(bool ok, const std::string& what) {
  ++cases;
  int all = ok;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!ok) std::printf("FAIL on rank %d: %s\n", rank, what.c_str());
  if (!all) ++failures;
}

std::uint64_t fnv(const std::vector<std::byte>& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte b : bytes) h = (h ^ std::uint64_t(b)) * 1099511628211ull;
  return h;
}

bool same_on_every_rank(const std::vector<std::byte>& bytes) {
  std::uint64_t mine = fnv(bytes), first = mine;
  MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return mine == first;
}

const std::vector<std::size_t> kCounts = {1, 17, 4096, 100003, 3, 262147};
DataType dtype_of(std::size_t k) { return k % 3 == 2 ? DataType::i32 : DataType::f32; }

void batch_case(Communicator& comm, int device, const PackingOptions& packing, long long bytes_per_pack,
                std::size_t expected_packs, const std::string& label) {
  std::vector<std::unique_ptr<DeviceTensor>> owned;
  std::vector<Tensor> tensors;
  for (std::size_t k = 0; k < kCounts.size(); ++k) {
    owned.push_back(std::make_unique<DeviceTensor>(dtype_of(k), kCounts[k], device));
    owned.back()->upload(host_values(dtype_of(k), kCounts[k], k, rank, 0));
    tensors.push_back(owned.back()->t);
  }
  CommunicationOptions options;
  options.bytes_per_pack = bytes_per_pack;
  options.timeout_seconds = 120;
  std::vector<std::size_t> done;
  comm.batch_all_reduce(tensors, ReduceOp::sum, packing, options, [&](std::size_t p) { done.push_back(p); });
  bool ok = true;
  for (std::size_t k = 0; k < kCounts.size(); ++k) {
    const auto got = owned[k]->download();
    ok = ok && got == reference(dtype_of(k), kCounts[k], k, 1, false) && same_on_every_rank(got);
  }
  bool in_order = expected_packs == 0 || done.size() == expected_packs;
  for (std::size_t p = 0; p < done.size(); ++p) in_order = in_order && done[p] == p;
  verdict(ok, "batch " + label + ": results differ from the reference or between ranks");
  verdict(in_order, "batch " + label + ": on_pack_done calls " + std::to_string(done.size()) + ", expected " +
                        std::to_string(expected_packs) + " in order");
}

void replica_cases(Communicator& comm, const std::vector<int>& devices, const std::string& spec) {
  const int replicas = int(devices.size());
  MultiWorkerAllReduce strategy(comm, replicas, spec);
  CommunicationOptions options;
  options.timeout_seconds = 120;
  for (const bool mean : {false, true})
    for (const int destination : {-1, size - 1}) {
      const std::string label = spec + (mean ? " mean" : " sum") +
                                (destination < 0 ? " to all" : " to rank " + std::to_string(destination));
      std::vector<std::vector<std::unique_ptr<DeviceTensor>>> owned(kCounts.size());
      std::vector<std::pair<PerReplica, Destination>> pairs;
      for (std::size_t k = 0; k < kCounts.size(); ++k) {
        PerReplica value;
        for (int r = 0; r < replicas; ++r) {
          owned[k].push_back(std::make_unique<DeviceTensor>(dtype_of(k), kCounts[k], devices[std::size_t(r)]));
          owned[k].back()->upload(host_values(dtype_of(k), kCounts[k], k, rank, r));
          value.push_back(owned[k].back()->t);
        }
        pairs.emplace_back(value, destination < 0 ? Destination::all_ranks() : Destination::rank(destination));
      }
      try {
        strategy.batch_reduce(mean ? ReduceOp::mean : ReduceOp::sum, pairs, options);
      } catch (const Unavailable& e) {
        if (rank == 0) std::printf("skip %s: %s\n", label.c_str(), e.what());
        ++skipped;
        if (spec == "auto") verdict(false, "auto was refused: " + std::string(e.what()));
        return;
      }
      bool ok = true;
      const bool lands = destination < 0 || destination == rank;
      for (std::size_t k = 0; k < kCounts.size(); ++k)
        for (int r = 0; r < replicas; ++r) {
          const auto got = owned[k][std::size_t(r)]->download();
          const auto want = lands ? reference(dtype_of(k), kCounts[k], k, replicas, mean)
                                  : host_values(dtype_of(k), kCounts[k], k, rank, r);  // untouched
          ok = ok && got == want;
        }
      verdict(ok, "replicas " + label + ": results differ from the reference (or a non-destination changed)");
    }

  // Broadcast from the last rank's replica 0, to all and to rank 0 only.
  for (const int destination : {-1, 0}) {
    std::vector<std::unique_ptr<DeviceTensor>> owned;
    PerReplica value;
    for (int r = 0; r < replicas; ++r) {
      owned.push_back(std::make_unique<DeviceTensor>(DataType::f32, 100003, devices[std::size_t(r)]));
      owned.back()->upload(host_values(DataType::f32, 100003, 9, rank, r));
      value.push_back(owned.back()->t);
    }
    try {
      strategy.broadcast(value, destination < 0 ? Destination::all_ranks() : Destination::rank(destination),
                         size - 1, options);
    } catch (const Unavailable& e) {
      if (rank == 0) std::printf("skip %s broadcast: %s\n", spec.c_str(), e.what());
      ++skipped;
      if (spec == "auto") verdict(false, "auto broadcast was refused: " + std::string(e.what()));
      return;
    }
    bool ok = true;
    const bool lands = destination < 0 || destination == rank;
    for (int r = 0; r < replicas; ++r)
      ok = ok && owned[std::size_t(r)]->download() ==
                     (lands ? host_values(DataType::f32, 100003, 9, size - 1, 0)
                            : host_values(DataType::f32, 100003, 9, rank, r));
    verdict(ok, spec + " broadcast " + (destination < 0 ? "to all" : "to rank 0") + " wrong");
  }
}

}  // namespace

int main(int argc, char** argv) {
  gpu_test::skip_without_device("test_gpu_batch");
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    Communicator comm(MPI_COMM_WORLD);
    const int device = comm.topology().ranks[std::size_t(rank)].gpu.cuda_device;
    if (device < 0) {
      std::printf("FAIL on rank %d: no GPU assignment: %s\n", rank, comm.topology().ranks[std::size_t(rank)].gpu.how.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Packing: 4 f32 tensors and 2 i32 tensors.
    batch_case(comm, device, PackingOptions{}, 0, 2, "automatic (one pack per dtype)");
    batch_case(comm, device, PackingOptions{.num_packs = 3}, 0, 6, "num_packs 3");
    batch_case(comm, device, PackingOptions{}, 1, 6, "bytes_per_pack 1 (one tensor per pack)");
    batch_case(comm, device, PackingOptions{.agg_small_grads_max_bytes = 1024, .agg_small_grads_max_group = 2}, 0, 0,
               "small-gradient aggregation");

    int count = 0;
    cudaGetDeviceCount(&count);
    // Two replicas: on their own devices where there are two, else sharing.
    const std::vector<int> devices = count >= 2 ? std::vector<int>{device, (device + 1) % count}
                                                : std::vector<int>{device, device};
    for (const char* spec : {"auto", "psgpu", "xring", "nccl/xring", "nccl/pscpu", "pscpu/pscpu", "nccl", "nccl/nccl"})
      replica_cases(comm, devices, spec);
    // Four replicas where the process sees four devices.
    if (count >= 4)
      for (const char* spec : {"auto", "psgpu", "nccl/xring"})
        replica_cases(comm, {device, (device + 1) % count, (device + 2) % count, (device + 3) % count}, spec);
    // A TensorFlow-style replica list, devices 0, 1, ...: replica 0 need not
    // be the rank's own device (every rank but rank 0 at 2 ranks of 2 GPUs).
    if (count >= 2)
      for (const char* spec : {"auto", "psgpu"}) replica_cases(comm, {0, 1}, spec);
  }
  if (rank == 0) std::printf("%d cases, %d failing, %d specs skipped (Unavailable)\n", cases, failures, skipped);
  MPI_Finalize();
  return failures ? 1 : 0;
}
