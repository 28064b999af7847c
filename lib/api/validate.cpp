#include "api/validate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "strata/errors.hpp"
#include "util/element.hpp"
#include "util/where.hpp"

namespace strata::api {

void validate_options(const CommunicationOptions& options) {
  if (options.bytes_per_pack < 0)
    throw InvalidArgument(
        util::located(fmt::format("options.bytes_per_pack = {} must be >= 0 (0 = automatic)", options.bytes_per_pack)));
  if (std::isnan(options.timeout_seconds))
    throw InvalidArgument(util::located("options.timeout_seconds = NaN must be a number >= 0 (0 = no timeout)"));
  if (options.timeout_seconds < 0 || std::isinf(options.timeout_seconds))
    throw InvalidArgument(util::located(
        fmt::format("options.timeout_seconds = {} must be finite and >= 0 (0 = no timeout)", options.timeout_seconds)));
  const int impl = static_cast<int>(options.implementation);
  if (impl < 0 || impl > static_cast<int>(Implementation::nccl))
    throw InvalidArgument(
        util::located(fmt::format("options.implementation = {} is not automatic, ring or nccl", impl)));
}

void validate_implementation(const CommunicationOptions& options, Memory memory, std::string_view field) {
  if (options.implementation == Implementation::nccl && memory == Memory::host)
    throw InvalidArgument(
        util::located(fmt::format("options.implementation = nccl needs CUDA tensors, but {} is in host memory; "
                                  "use automatic or ring for host tensors",
                                  field)));
}

void validate_config(const Config& config) {
  // Tiny chunks make the ring all overhead (one message per element); huge
  // ones overflow scratch sizes and defeat pipelining.
  if (config.chunk_bytes != 0 && (config.chunk_bytes < kMinChunkBytes || config.chunk_bytes > kMaxChunkBytes))
    throw InvalidArgument(
        util::located(fmt::format("config.chunk_bytes = {} must be 0 (default: 256 KiB) or in [{}, {}] bytes",
                                  config.chunk_bytes, kMinChunkBytes, kMaxChunkBytes)));
  if (config.verify != Verification::off && config.verify != Verification::checksum)
    throw InvalidArgument(util::located(fmt::format("config.verify = {} is not off (0) or checksum (1)",
                                                    static_cast<int>(config.verify))));
}

void validate_op(ReduceOp op) {
  const int value = static_cast<int>(op);
  if (value < 0 || value > static_cast<int>(ReduceOp::prod))
    throw InvalidArgument(util::located(fmt::format("op = {} is not one of sum, mean, min, max, prod", value)));
}

void validate_tensor(const Tensor& tensor, std::string_view field, bool data_required) {
  const int dtype = static_cast<int>(tensor.dtype);
  if (dtype < 0 || dtype > static_cast<int>(DataType::u64))
    throw InvalidArgument(util::located(fmt::format("{}.dtype = {} is not a strata DataType", field, dtype)));
  if (tensor.memory == Memory::cuda && tensor.device < -1)
    throw InvalidArgument(util::located(
        fmt::format("{}.device = {} must be a CUDA device index (or -1: this rank's device)", field, tensor.device)));
  if (tensor.memory != Memory::host && tensor.memory != Memory::cuda)
    throw InvalidArgument(
        util::located(fmt::format("{}.memory = {} is not host or cuda", field, static_cast<int>(tensor.memory))));
  // (No divisions: this runs on every call, and element sizes are powers of two.)
  const std::size_t element = util::element_bytes(tensor.dtype);  // (dtype checked above)
  // Every buffer ends inside the address space: checked here so that no
  // byte count or end address downstream can overflow, and no algorithm
  // runs over memory that cannot exist.
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(tensor.count, element, &bytes) || bytes > kMaxBufferBytes)
    throw InvalidArgument(
        util::located(fmt::format("{}.count = {} x {} bytes cannot be a buffer: it is larger than the address "
                                  "space ({:#x} bytes)",
                                  field, tensor.count, element, kMaxBufferBytes)));
  if (data_required && tensor.data == nullptr && tensor.count > 0)
    throw InvalidArgument(util::located(fmt::format("{}.data is null but {}.count = {}", field, field, tensor.count)));
  const auto address = reinterpret_cast<std::uintptr_t>(tensor.data);
  if (address > kMaxBufferBytes - bytes)
    throw InvalidArgument(util::located(fmt::format(
        "{}.data = {} + {}.count = {} x {} bytes cannot be a buffer: it ends past the end of the address space "
        "({:#x}); check {}.count",
        field, tensor.data, field, tensor.count, element, kMaxBufferBytes, field)));
  // Element-aligned buffers only: the kernels load whole elements (and
  // vectors of them); a misaligned f64 load is undefined behaviour on the
  // host and a fault on the GPU. Copy unaligned data into an aligned buffer.
  if ((address & (element - 1)) != 0)
    throw InvalidArgument(
        util::located(fmt::format("{}.data = {} is not aligned to {} bytes, the size of one {} element; pass "
                                  "element-aligned buffers",
                                  field, tensor.data, element, to_string(tensor.dtype))));
}

void validate_in_out(const Tensor& in, const Tensor& out) {
  if (in.memory != out.memory)
    throw InvalidArgument(
        util::located(fmt::format("out.memory = {} differs from in.memory = {}; both must be host or both cuda",
                                  to_string(out.memory), to_string(in.memory))));
  if (in.count != out.count)
    throw InvalidArgument(util::located(fmt::format("out.count = {} differs from in.count = {}", out.count, in.count)));
  if (in.dtype != out.dtype)
    throw InvalidArgument(util::located(
        fmt::format("out.dtype = {} differs from in.dtype = {}", to_string(out.dtype), to_string(in.dtype))));
  if (in.data == out.data || in.data == nullptr || out.data == nullptr || in.count == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(in.data), b = reinterpret_cast<std::uintptr_t>(out.data);
  const std::size_t bytes = in.bytes();
  if (a < b + bytes && b < a + bytes)
    throw InvalidArgument(util::located(fmt::format(
        "in.data = {} and out.data = {} overlap ({} bytes each) without being equal; pass the same pointer for "
        "in place, or disjoint buffers",
        in.data, out.data, bytes)));
}

void validate_blocks(const Tensor& whole, std::string_view whole_field, const Tensor& block,
                     std::string_view block_field, int size, int rank) {
  if (whole.memory != block.memory)
    throw InvalidArgument(util::located(fmt::format("{}.memory = {} differs from {}.memory = {}; both must be host or "
                                                    "both cuda",
                                                    block_field, to_string(block.memory), whole_field,
                                                    to_string(whole.memory))));
  if (whole.dtype != block.dtype)
    throw InvalidArgument(util::located(fmt::format("{}.dtype = {} differs from {}.dtype = {}", block_field,
                                                    to_string(block.dtype), whole_field, to_string(whole.dtype))));
  const auto ranks = static_cast<std::size_t>(size);
  if (whole.count % ranks != 0 || whole.count / ranks != block.count)
    throw InvalidArgument(util::located(fmt::format(
        "{}.count = {} must be {}.count = {} times the {} ranks of this communicator ({}): one block per rank",
        whole_field, whole.count, block_field, block.count, size, static_cast<unsigned long long>(block.count) * ranks)));
  if (block.data == nullptr || whole.data == nullptr || block.count == 0) return;
  const auto w = reinterpret_cast<std::uintptr_t>(whole.data), b = reinterpret_cast<std::uintptr_t>(block.data);
  const std::size_t block_bytes = block.bytes();
  if (b == w + static_cast<std::size_t>(rank) * block_bytes) return;  // in place
  if (b < w + whole.bytes() && w < b + block_bytes)
    throw InvalidArgument(util::located(fmt::format(
        "{}.data = {} overlaps {}.data = {} without being its block for this rank ({}.data + {} x {} bytes = {}); "
        "pass that block for in place, or disjoint buffers",
        block_field, block.data, whole_field, whole.data, whole_field, rank, block_bytes,
        static_cast<const void*>(static_cast<const std::byte*>(whole.data) + static_cast<std::size_t>(rank) * block_bytes))));
}

void validate_root(int root, int size) {
  if (root < 0 || root >= size)
    throw InvalidArgument(util::located(fmt::format("root = {} is outside [0, {}) for this communicator", root, size)));
}

}  // namespace strata::api

namespace strata::api {

void validate_same_memory(std::span<const Tensor> tensors, std::string_view field) {
  for (std::size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].memory != tensors[0].memory)
      throw InvalidArgument(
          util::located(fmt::format("{}[{}].memory = {} but {}[0].memory = {}; a batch is all host or all cuda", field,
                                    i, to_string(tensors[i].memory), field, to_string(tensors[0].memory))));
}

void validate_batch_size(std::span<const Tensor> tensors, std::string_view field) {
  std::size_t bytes[static_cast<int>(DataType::u64) + 1] = {};
  for (const Tensor& t : tensors) {
    std::size_t& total = bytes[static_cast<int>(t.dtype)];
    if (t.bytes() > kMaxBufferBytes - total)
      throw InvalidArgument(util::located(
          fmt::format("{}: the {} tensors together are larger than any buffer can be", field, to_string(t.dtype))));
    total += t.bytes();
  }
}

void validate_disjoint(std::span<const Tensor> tensors, std::string_view field) {
  struct Range {
    std::uintptr_t begin, end;
    std::size_t index;
  };
  std::vector<Range> ranges;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].count > 0) {
      const auto begin = reinterpret_cast<std::uintptr_t>(tensors[i].data);
      ranges.push_back({begin, begin + tensors[i].bytes(), i});
    }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      throw InvalidArgument(util::located(fmt::format(
          "{}[{}] and {}[{}] overlap in memory; each tensor of a batch needs its own buffer", field,
          std::min(ranges[i - 1].index, ranges[i].index), field, std::max(ranges[i - 1].index, ranges[i].index))));
}

void validate_device(int device, const topo::GpuRow& mine, std::string_view field) {
  if (device < 0 || mine.device < 0 || device == mine.device) return;
  throw InvalidArgument(util::located(
      fmt::format("{}.device = {}, but this rank drives CUDA device {} (the rank's GPU assignment: STRATA_GPU_MAP, "
                  "else its own nearest free GPU; see strata-topo): pass a tensor on device {} or -1",
                  field, device, mine.device, mine.device)));
}

void validate_replica_devices(const std::vector<std::vector<Tensor>>& batch, const topo::GpuRow& mine) {
  if (batch.empty() || batch.front().empty() || batch.front().front().memory != Memory::cuda || mine.device < 0) return;
  const std::vector<Tensor>& first = batch.front();
  const int visible = static_cast<int>(mine.bus_ids.size());
  for (std::size_t r = 0; r < first.size(); ++r) {
    const int device = first[r].device < 0 ? mine.device : first[r].device;
    if (device >= visible)
      throw InvalidArgument(util::located(fmt::format(
          "replica {} is on CUDA device {}, but this process sees {} CUDA device(s)", r, device, visible)));
    for (std::size_t k = 1; k < batch.size(); ++k)
      if (r < batch[k].size() && batch[k][r].device != first[r].device)
        throw InvalidArgument(util::located(
            fmt::format("tensor {} replica {} is on CUDA device {} but tensor 0 replica {} is on device {}; each "
                        "replica's tensors must share one device",
                        k, r, batch[k][r].device, r, first[r].device)));
  }
}

}  // namespace strata::api
