#include "util/fault.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/where.hpp"

namespace strata::util::fault {
namespace {

struct Chosen {
  Site site = Site::shm;
  std::uint64_t call = 0;
  int rank = -1;
  std::size_t bit = 30;
};

Chosen chosen;
std::uint64_t flipped = 0;

// STRATA_FAULT_FLIP's value, once at load time. A malformed value is said
// on stderr and arms nothing: this is a testing aid, and the library has
// no caller to raise to while it loads.
bool from_environment() {
  const char* env = std::getenv("STRATA_FAULT_FLIP");
  if (!env || !*env) return false;
  char site[16] = {};
  unsigned long long call = 0, bit = 30;
  int rank = -1;
  const int fields = std::sscanf(env, "%15[a-z]:%llu:%d:%llu", site, &call, &rank, &bit);
  const bool known = std::strcmp(site, "shm") == 0 || std::strcmp(site, "mpi") == 0;
  if (fields < 3 || !known || call == 0 || rank < 0) {
    std::fprintf(stderr,
                 "strata: STRATA_FAULT_FLIP = '%s' ignored: expected <shm|mpi>:<call number>:<world rank>[:<bit>]\n",
                 env);
    return false;
  }
  chosen = {std::strcmp(site, "shm") == 0 ? Site::shm : Site::mpi, call, rank, static_cast<std::size_t>(bit)};
  return true;
}

}  // namespace

namespace detail {

bool armed_flag = from_environment();

void flip_if_chosen(Site site, std::uint64_t call, void* data, std::size_t bytes) {
  if (site != chosen.site || call != chosen.call || chosen.bit / 8 >= bytes || world_rank() != chosen.rank) return;
  static_cast<unsigned char*>(data)[chosen.bit / 8] ^= static_cast<unsigned char>(1u << (chosen.bit % 8));
  armed_flag = false;
  ++flipped;
}

}  // namespace detail

void arm(Site site, std::uint64_t call, int world_rank, std::size_t bit) {
  chosen = {site, call, world_rank, bit};
  detail::armed_flag = true;
}

void disarm() { detail::armed_flag = false; }

std::uint64_t flips() { return flipped; }

}  // namespace strata::util::fault
