// The TF-named facades: validation of per-replica values and destinations,
// then the Session's batch path with the facade's spec and packing. They
// touch nothing of the Session but its run_batch entry.
#include "strata/cross_device_ops.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/session.hpp"
#include "api/validate.hpp"
#include "plan/packing.hpp"
#include "plan/spec.hpp"
#include "util/where.hpp"

namespace strata {

struct CrossDeviceOps::ParsedSpec {
  plan::Spec spec;
};

namespace {

void validate_value(const PerReplica& value, int replicas_per_rank, const std::string& field) {
  if (value.empty())
    throw InvalidArgument(util::located(fmt::format("{} has no replicas; pass one tensor per local replica", field)));
  if (replicas_per_rank > 0 && static_cast<int>(value.size()) != replicas_per_rank)
    throw InvalidArgument(
        util::located(fmt::format("{} has {} replica(s) but this strategy has num_gpus_per_worker = {}", field,
                                  value.size(), replicas_per_rank)));
  for (std::size_t r = 0; r < value.size(); ++r) {
    const std::string name = fmt::format("{}[{}]", field, r);
    api::validate_tensor(value[r], name);
    if (value[r].count != value[0].count || value[r].dtype != value[0].dtype)
      throw InvalidArgument(util::located(fmt::format("{} has {} x {} but replica 0 has {} x {}; replicas must match",
                                                      name, value[r].count, to_string(value[r].dtype), value[0].count,
                                                      to_string(value[0].dtype))));
  }
}

void validate_destination(Destination d, int size, std::string_view field) {
  if (!d.is_all_ranks() && (d.root() < 0 || d.root() >= size))
    throw InvalidArgument(util::located(fmt::format("{} = rank {} is outside [0, {})", field, d.root(), size)));
}

}  // namespace

CrossDeviceOps::CrossDeviceOps(Communicator& comm, const AllReduceSpec& spec, PackingOptions packing,
                               int replicas_per_rank)
    : comm_(comm),
      spec_text_(spec.to_string()),
      spec_(std::make_shared<ParsedSpec>(ParsedSpec{plan::Spec{spec.tuples()}})),
      packing_(packing),
      replicas_per_rank_(replicas_per_rank) {
  plan::validate_packing(packing_);
}

void CrossDeviceOps::reduce(ReduceOp op, const PerReplica& value, Destination destination,
                            const CommunicationOptions& options) {
  const std::pair<PerReplica, Destination> pair{value, destination};
  batch_reduce(op, std::span(&pair, 1), options);
}

void CrossDeviceOps::batch_reduce(ReduceOp op, std::span<const std::pair<PerReplica, Destination>> pairs,
                                  const CommunicationOptions& options) {
  api::Session& session = api::session_of(comm_);
  try {
    api::validate_options(options);
    api::validate_op(op);
    std::vector<Tensor> all;
    std::size_t replicas = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      validate_value(pairs[i].first, replicas_per_rank_, fmt::format("pairs[{}].value", i));
      validate_destination(pairs[i].second, comm_.size(), fmt::format("pairs[{}].destination", i));
      if (i > 0 && pairs[i].first.size() != replicas)
        throw InvalidArgument(util::located(
            fmt::format("pairs[{}].value has {} replica(s), pairs[0] has {}", i, pairs[i].first.size(), replicas)));
      replicas = pairs[i].first.size();
      all.insert(all.end(), pairs[i].first.begin(), pairs[i].first.end());
    }
    api::validate_same_memory(all, "replica tensors");
    api::validate_batch_size(all, "replica tensors");
    api::validate_disjoint(all, "replica tensors");
    if (!all.empty()) api::validate_implementation(options, all.front().memory, "replica tensors");
  } catch (const InvalidArgument& e) {
    // Still collective: the other ranks learn of it (api::Session::refuse).
    std::vector<std::vector<Tensor>> as_passed;
    for (const auto& pair : pairs) as_passed.push_back(pair.first);
    exec::BatchCall call;
    const int first_root = pairs.empty() ? -1 : pairs.front().second.root();
    call.collective = first_root < 0 ? Collective::all_reduce : Collective::reduce;
    call.batch = &as_passed;
    call.op = op;
    call.root = std::max(first_root, 0);
    call.packing = packing_;
    call.options = &options;
    call.spec = &spec_->spec;
    session.refuse(e, call);
  }
  // One batch per destination, in order of first appearance (the same on
  // every rank, since every rank passes the same pairs).
  std::vector<int> order;
  for (const auto& [value, destination] : pairs)
    if (std::find(order.begin(), order.end(), destination.root()) == order.end()) order.push_back(destination.root());
  for (int root : order) {
    std::vector<std::vector<Tensor>> batch;
    for (const auto& [value, destination] : pairs)
      if (destination.root() == root) batch.push_back(value);
    exec::BatchCall call;
    call.collective = root < 0 ? Collective::all_reduce : Collective::reduce;
    call.batch = &batch;
    call.op = op;
    call.root = std::max(root, 0);
    call.lands_here = root < 0 || root == session.rank();
    call.packing = packing_;
    call.options = &options;
    call.spec = &spec_->spec;
    session.run_batch(call);
  }
}

void CrossDeviceOps::broadcast(const PerReplica& value, Destination destinations, int source_rank,
                               const CommunicationOptions& options) {
  api::Session& session = api::session_of(comm_);
  const std::vector<std::vector<Tensor>> batch{value};
  exec::BatchCall call;
  call.collective = Collective::broadcast;
  call.batch = &batch;
  call.root = source_rank;
  // Every replica receives (where this rank is a destination) from the
  // source's replica 0; a rank that is not a destination takes part in
  // scratch, its tensors unchanged.
  call.lands_here = destinations.is_all_ranks() || destinations.root() == session.rank();
  call.options = &options;
  call.spec = &spec_->spec;
  try {
    api::validate_options(options);
    validate_value(value, replicas_per_rank_, "value");
    validate_destination(destinations, comm_.size(), "destinations");
    api::validate_root(source_rank, comm_.size());
    if (!value.empty()) api::validate_implementation(options, value.front().memory, "value");
  } catch (const InvalidArgument& e) {
    session.refuse(e, call);  // still collective: the other ranks learn of it
  }
  session.run_batch(call);
}

NcclAllReduce::NcclAllReduce(Communicator& comm, int num_packs)
    : CrossDeviceOps(comm, "nccl", PackingOptions{.num_packs = num_packs}, 0) {}

MultiWorkerAllReduce::MultiWorkerAllReduce(Communicator& comm, int num_gpus_per_worker,
                                           const AllReduceSpec& all_reduce_spec, int num_packs,
                                           long long agg_small_grads_max_bytes, int agg_small_grads_max_group)
    : CrossDeviceOps(comm, all_reduce_spec,
                     PackingOptions{num_packs, agg_small_grads_max_bytes, agg_small_grads_max_group},
                     num_gpus_per_worker) {
  if (num_gpus_per_worker < 1)
    throw InvalidArgument(util::located(fmt::format("num_gpus_per_worker = {} must be >= 1", num_gpus_per_worker)));
}

ReductionToOneDevice::ReductionToOneDevice(Communicator& comm) : CrossDeviceOps(comm, "tree", PackingOptions{}, 0) {}

}  // namespace strata
