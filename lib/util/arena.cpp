#include "util/arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "util/abandoned.hpp"

namespace strata::util {
namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kMinBlock = std::size_t{1} << 20;

std::size_t round_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

std::byte* Arena::allocate(std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1));
  if (blocks_.empty() || blocks_.back().bytes - used_ < bytes) {
    const std::size_t size = std::max({bytes, kMinBlock, blocks_.empty() ? 0 : 2 * blocks_.back().bytes});
    void* fresh = std::aligned_alloc(kAlign, size);
    if (!fresh) throw std::bad_alloc();
    blocks_.push_back({static_cast<std::byte*>(fresh), size});
    used_ = 0;
  }
  std::byte* at = blocks_.back().data + used_;
  used_ += bytes;
  total_ += bytes;
  return at;
}

void Arena::reset_blocks() {
  if (blocks_.size() > 1) {
    // Several blocks were needed: replace them by one that holds them all.
    const std::size_t needed = std::max(kMinBlock, round_up(total_));
    for (Block& block : blocks_) std::free(block.data);
    blocks_.clear();
    void* fresh = std::aligned_alloc(kAlign, needed);
    if (fresh) blocks_.push_back({static_cast<std::byte*>(fresh), needed});
  }
  used_ = 0;
  total_ = 0;
}

void Arena::abandon() {
  // A receive given up too late may still land there: kept forever.
  for (Block& block : blocks_) keep_forever(block.data);
  blocks_.clear();
  used_ = 0;
  total_ = 0;
}

Arena::~Arena() {
  for (Block& block : blocks_) std::free(block.data);
}

}  // namespace strata::util
