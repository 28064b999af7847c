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
//   - replicas produced on their own devices just before the call (2 and 4
//     devices): each device's legacy default stream held back by a host
//     function before an upload queued behind it, and plain pageable
//     cudaMemcpy uploads; strata must order every replica after its own
//     device's producer.
// i32 data are small integers, exact in any order; f32 data are inexact
// floats (reduction_order.hpp), checked bit for bit against the host's
// fold in the order strata fixes: each rank's replicas combined in replica
// order, then across ranks as the plan reduces (psgpu in rank order), and
// within rounding where that order is the algorithm's own (NCCL's sums,
// rings, trees; every replica an NCCL rank of its own). Uploads are
// pageable cudaMemcpy on the legacy default stream, which strata's work
// follows by default (CommunicationOptions::stream).
// The communicator's default spec ("auto") follows the GPU control plane,
// so it must pass in every layout; an explicit spec whose NCCL levels the
// plane refuses here (ranks sharing a GPU) raises Unavailable on every
// rank, which is reported with its reason and counted as skipped. Exits 77
// without a device.
#include <cuda_runtime.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_specs.hpp"
#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "reduction_order.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::every_rank_check;

namespace {

int skipped = 0;
int rank = 0, size = 1;
const Topology* topology = nullptr;

// Element i of i32 tensor k, replica r, on rank q.
int value(std::size_t i, std::size_t k, int q, int r) { return int((i * 7 + k * 5 + std::size_t(q) * 3 + std::size_t(r) * 11) % 5) - 2; }

// Tensor k of replica r on rank q: small integers (i32), inexact floats (f32).
std::vector<std::byte> host_values(DataType dtype, std::size_t count, std::size_t k, int q, int r) {
  if (dtype == DataType::f32)
    return gpu_test::inexact_values(dtype, count, ReduceOp::sum, k * 10000 + std::size_t(q) * 100 + std::size_t(r));
  std::vector<std::byte> out(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    const std::int32_t v = value(i, k, q, r);
    std::memcpy(out.data() + i * 4, &v, 4);
  }
  return out;
}

// Whether a reduction may run with every replica of every rank an NCCL rank
// of its own, in NCCL's order (docs/GPU.md, "Batches and several GPUs per
// rank"): an all-reduce of several replicas on distinct devices whose plan
// is NCCL at every level. Whether every rank's replicas sit on GPUs of their
// own as well is the control plane's verdict, not known here: where it says
// no the replicas are combined, which the check of that order allows too.
bool replica_ranks_possible(const std::string& algorithm, Collective collective, const std::vector<int>& devices) {
  if (collective != Collective::all_reduce || devices.size() < 2) return false;
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size()) return false;
  for (const std::string& level : gpu_test::plan_levels(algorithm))
    if (level != "nccl") return false;
  return true;
}

// "" when `got` is tensor k's sum (or mean) over every rank's replicas, as
// the plan `algorithm` reduces them for `collective`; else what differs.
// i32 exactly; f32 per gpu_test::Expected, leaf q * replicas + r being
// replica r of rank q. Expectations are kept by the fold's signature.
std::string check_tensor(const std::vector<std::byte>& got, DataType dtype, std::size_t count, std::size_t k,
                         const std::vector<int>& devices, bool mean, const std::string& algorithm,
                         Collective collective) {
  const int replicas = int(devices.size());
  if (dtype == DataType::i32) {
    for (std::size_t i = 0; i < count; ++i) {
      long long sum = 0;
      for (int q = 0; q < size; ++q)
        for (int r = 0; r < replicas; ++r) sum += value(i, k, q, r);
      const std::int32_t want = std::int32_t(mean ? sum / (size * replicas) : sum);
      std::int32_t have;
      std::memcpy(&have, got.data() + i * 4, 4);
      if (have != want) return "i32 element " + std::to_string(i) + " is " + std::to_string(have) + ", not " + std::to_string(want);
    }
    return "";
  }
  gpu_test::Fold fold;
  if (replica_ranks_possible(algorithm, collective, devices)) {
    fold.fixed = false;  // one NCCL reduction over all of them
    for (int leaf = 0; leaf < size * replicas; ++leaf) fold.parts.push_back({leaf, {}, true});
  } else {
    fold = gpu_test::plan_fold(algorithm, *topology, collective, ReduceOp::sum, dtype, [&](int q) {
      gpu_test::Fold combined;  // replica order (strata's combine)
      for (int r = 0; r < replicas; ++r) combined.parts.push_back({q * replicas + r, {}, true});
      return combined;
    });
  }
  const ReduceOp op = mean ? ReduceOp::mean : ReduceOp::sum;
  using Key = std::tuple<std::string, std::size_t, int, ReduceOp>;
  static std::map<Key, gpu_test::Expected> kept;
  auto [it, fresh] = kept.try_emplace(Key{gpu_test::signature(fold, op), k, replicas, op});
  if (fresh) {
    std::vector<std::vector<std::byte>> leaves;
    for (int q = 0; q < size; ++q)
      for (int r = 0; r < replicas; ++r) leaves.push_back(host_values(dtype, count, k, q, r));
    it->second = gpu_test::expect(fold, leaves, 0, count, dtype, op, std::size_t(size * replicas));
  }
  const std::string why = it->second.compare(got);
  return why.empty() ? why : why + " (plan " + algorithm + ")";
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

// Whether rank 0 holds the same bits (rank 0 itself: always).
bool same_on_every_rank(const std::vector<std::byte>& bytes) {
  std::uint64_t mine = test::hash_bytes(bytes.data(), bytes.size()), first = mine;
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
  // The algorithm of each tensor's pack.
  std::vector<std::string> algorithm(kCounts.size());
  for (const PlannedPack& pack : comm.plan_for(tensors, packing, options).packs)
    for (std::size_t k : pack.tensors) algorithm[k] = pack.algorithm;
  std::vector<std::size_t> done;
  comm.batch_all_reduce(tensors, ReduceOp::sum, packing, options, [&](std::size_t p) { done.push_back(p); });
  std::string why;
  bool same = true;
  for (std::size_t k = 0; k < kCounts.size(); ++k) {
    const auto got = owned[k]->download();
    const std::string wrong =
        check_tensor(got, dtype_of(k), kCounts[k], k, {device}, false, algorithm[k], Collective::all_reduce);
    if (why.empty() && !wrong.empty()) why = "tensor " + std::to_string(k) + ": " + wrong;
    same = same_on_every_rank(got) && same;
  }
  bool in_order = expected_packs == 0 || done.size() == expected_packs;
  for (std::size_t p = 0; p < done.size(); ++p) in_order = in_order && done[p] == p;
  every_rank_check(why.empty(), "batch " + label + ": results differ from the reference: " + why);
  every_rank_check(same, "batch " + label + ": results differ between ranks");
  every_rank_check(in_order, "batch " + label + ": on_pack_done calls " + std::to_string(done.size()) + ", expected " +
                        std::to_string(expected_packs) + " in order");
}

// The plan `spec` runs for `collective` on `bytes` (auto: as the
// communicator's automatic table says; an explicit spec is one entry).
std::string plan_of(const Communicator& comm, const std::string& spec, Collective collective, std::size_t bytes) {
  return spec == "auto" ? comm.algorithm_for(bytes, collective, Memory::cuda) : spec;
}

// Checks every replica of every tensor after a reduction to `destination`
// (-1: all ranks): the reduction where it lands, untouched elsewhere.
void check_replicas(const Communicator& comm, const std::vector<std::vector<std::unique_ptr<DeviceTensor>>>& owned,
                    const std::vector<std::size_t>& ks, const std::vector<int>& devices, const std::string& spec,
                    bool mean, int destination, const std::string& label) {
  const Collective collective = destination < 0 ? Collective::all_reduce : Collective::reduce;
  const bool lands = destination < 0 || destination == rank;
  std::string why;
  for (std::size_t t = 0; t < ks.size(); ++t) {
    const std::size_t k = ks[t];
    const std::string algorithm = plan_of(comm, spec, collective, kCounts[k] * 4);
    for (std::size_t r = 0; r < devices.size(); ++r) {
      const auto got = owned[t][r]->download();
      const std::string wrong =
          lands ? check_tensor(got, dtype_of(k), kCounts[k], k, devices, mean, algorithm, collective)
          : got == host_values(dtype_of(k), kCounts[k], k, rank, int(r)) ? ""
                                                                         : "a non-destination changed";
      if (why.empty() && !wrong.empty()) why = "tensor " + std::to_string(k) + " replica " + std::to_string(r) + ": " + wrong;
    }
  }
  every_rank_check(why.empty(), label + ": results differ from the reference: " + why);
}

// One MultiWorkerAllReduce per spec and replica count, kept for the whole
// run as a program keeps its strategy. (A strategy made for each case, at
// the address of one just destroyed, was run with the destroyed one's plan
// by some ranks: the communicator's plan cache knows a spec by its
// address. Reported; until it is fixed, no test makes strategies anew.)
std::map<std::pair<int, std::string>, std::unique_ptr<MultiWorkerAllReduce>> strategies;  // cleared before comm ends

MultiWorkerAllReduce& strategy_for(Communicator& comm, int replicas, const std::string& spec) {
  auto& s = strategies[{replicas, spec}];
  if (!s) s = std::make_unique<MultiWorkerAllReduce>(comm, replicas, spec);
  return *s;
}

void replica_cases(Communicator& comm, const std::vector<int>& devices, const std::string& spec) {
  const int replicas = int(devices.size());
  MultiWorkerAllReduce& strategy = strategy_for(comm, replicas, spec);
  CommunicationOptions options;
  options.timeout_seconds = 120;
  std::vector<std::size_t> every(kCounts.size());
  for (std::size_t k = 0; k < kCounts.size(); ++k) every[k] = k;
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
        if (spec == "auto") every_rank_check(false, "auto was refused: " + std::string(e.what()));
        return;
      }
      check_replicas(comm, owned, every, devices, spec, mean, destination, "replicas " + label);
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
      if (spec == "auto") every_rank_check(false, "auto broadcast was refused: " + std::string(e.what()));
      return;
    }
    bool ok = true;
    const bool lands = destination < 0 || destination == rank;
    for (int r = 0; r < replicas; ++r)
      ok = ok && owned[std::size_t(r)]->download() ==
                     (lands ? host_values(DataType::f32, 100003, 9, size - 1, 0)
                            : host_values(DataType::f32, 100003, 9, rank, r));
    every_rank_check(ok, spec + " broadcast " + (destination < 0 ? "to all" : "to rank 0") + " wrong");
  }
}

// The producer's slow work on a device (as test_gpu_stream's hold_back):
// strata must order its reads after it; nothing asserts a time.
void CUDART_CB hold_back(void*) { usleep(200 * 1000); }

// Replicas whose data is produced on their own devices just before the
// call, with no synchronisation, on each device's legacy default stream,
// which a call without a stream orders every replica after (docs/GPU.md,
// "Streams"): `held`: a host function holds each device's stream back,
// then an upload from pinned memory is queued behind it; otherwise a plain
// pageable cudaMemcpy, which CUDA may return from before the data landed.
// A call that orders only the rank's own device reads the other replicas'
// old contents (zeros).
void produced_case(Communicator& comm, const std::vector<int>& devices, const std::string& spec, bool held) {
  const int replicas = int(devices.size());
  const std::vector<std::size_t> ks = {1, 3};  // two f32 tensors: one pack
  MultiWorkerAllReduce& strategy = strategy_for(comm, replicas, spec);
  std::vector<std::vector<std::unique_ptr<DeviceTensor>>> owned(ks.size());
  std::vector<std::vector<void*>> pinned(ks.size());
  std::vector<std::pair<PerReplica, Destination>> pairs;
  for (std::size_t t = 0; t < ks.size(); ++t) {
    PerReplica value;
    for (int r = 0; r < replicas; ++r) {
      auto& tensor = *owned[t].emplace_back(std::make_unique<DeviceTensor>(DataType::f32, kCounts[ks[t]], devices[std::size_t(r)]));
      cudaMemset(tensor.t.data, 0, tensor.t.bytes());
      const auto bytes = host_values(DataType::f32, kCounts[ks[t]], ks[t], rank, r);
      cudaMallocHost(&pinned[t].emplace_back(), bytes.size());
      std::memcpy(pinned[t].back(), bytes.data(), bytes.size());
      value.push_back(tensor.t);
    }
    pairs.emplace_back(value, Destination::all_ranks());
  }
  for (int d : std::set<int>(devices.begin(), devices.end())) {  // every buffer is zeros, nothing queued
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  if (held)
    for (int d : std::set<int>(devices.begin(), devices.end())) {
      cudaSetDevice(d);
      cudaLaunchHostFunc(cudaStreamLegacy, hold_back, nullptr);
    }
  for (std::size_t t = 0; t < ks.size(); ++t)
    for (int r = 0; r < replicas; ++r) {
      DeviceTensor& tensor = *owned[t][std::size_t(r)];
      cudaSetDevice(devices[std::size_t(r)]);
      if (held)
        cudaMemcpyAsync(tensor.t.data, pinned[t][std::size_t(r)], tensor.t.bytes(), cudaMemcpyHostToDevice,
                        cudaStreamLegacy);
      else
        tensor.upload(host_values(DataType::f32, kCounts[ks[t]], ks[t], rank, r));
    }
  cudaSetDevice(devices[0]);
  const std::string label = "replicas produced on their own devices just before the call (" + spec + ", " +
                            std::to_string(replicas) + " replicas, " +
                            (held ? "upload held back on each device" : "pageable cudaMemcpy") + ")";
  std::string refused;
  try {
    strategy.batch_reduce(ReduceOp::sum, pairs, {.timeout_seconds = 120});
  } catch (const Unavailable& e) {
    refused = e.what();
  }
  if (refused.empty()) check_replicas(comm, owned, ks, devices, spec, false, -1, label);
  for (int d : std::set<int>(devices.begin(), devices.end())) {  // the uploads read the pinned buffers
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  cudaSetDevice(devices[0]);
  for (auto& list : pinned)
    for (void* p : list) cudaFreeHost(p);
  if (refused.empty()) return;
  if (rank == 0) std::printf("skip %s: %s\n", label.c_str(), refused.c_str());
  ++skipped;
  if (spec == "auto") every_rank_check(false, "auto was refused: " + refused);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_batch");
  rank = start.rank;
  size = start.size;
  {
    Communicator comm(MPI_COMM_WORLD);
    topology = &comm.topology();
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
    for (const std::string& spec : gpu_test::gpu_specs()) replica_cases(comm, devices, spec);
    // Four replicas where the process sees four devices.
    const std::vector<int> four = {device, (device + 1) % count, (device + 2) % count, (device + 3) % count};
    if (count >= 4)
      for (const char* spec : {"auto", "psgpu", "nccl/xring"}) replica_cases(comm, four, spec);
    // Replicas produced on their own devices just before the call, on 2
    // devices and on 4 (NCCL replica ranks under auto where the control
    // plane allows them, combined replicas under psgpu).
    if (count >= 2)
      for (const bool held : {true, false})
        for (const char* spec : {"auto", "psgpu"}) {
          produced_case(comm, devices, spec, held);
          if (count >= 4) produced_case(comm, four, spec, held);
        }
    cudaSetDevice(device);
    // A TensorFlow-style replica list, devices 0, 1, ...: replica 0 need not
    // be the rank's own device (every rank but rank 0 at 2 ranks of 2 GPUs).
    if (count >= 2)
      for (const char* spec : {"auto", "psgpu"}) replica_cases(comm, {0, 1}, spec);
  }
  if (rank == 0) std::printf("%d specs skipped (Unavailable)\n", skipped);
  return gpu_test::end_program();
}
