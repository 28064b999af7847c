#include "exec/blockwise.hpp"

#include <cstddef>

namespace strata::exec {
namespace {

void* block(void* buffer, const plan::Job& job, int index) {
  return static_cast<std::byte*>(buffer) + static_cast<std::size_t>(index) * job.bytes();
}

}  // namespace

void reduce_scatter_blocks(plan::Level& level, const plan::Job& job, int rank, int size, void* whole) {
  if (size == 1) return level.copy(job);
  plan::Job all = job;
  all.count = job.count * static_cast<std::size_t>(size);
  all.out = whole;
  level.reduce_scatter(all, size);
  plan::Job mine = job;
  mine.in = block(whole, job, rank);
  level.copy(mine);
}

}  // namespace strata::exec
