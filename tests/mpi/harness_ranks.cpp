#include "harness_ranks.hpp"

#include <thread>

namespace strata::test {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::uint64_t hash_bytes(const void* data, std::size_t bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

bool all_ranks(MPI_Comm comm, bool local) {
  int value = local ? 1 : 0, result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_LAND, comm);
  return result != 0;
}

std::vector<int> ranks_where(MPI_Comm comm, bool local) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int value = local ? 1 : 0;
  std::vector<int> flags(static_cast<std::size_t>(size));
  MPI_Allgather(&value, 1, MPI_INT, flags.data(), 1, MPI_INT, comm);
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r)
    if (flags[static_cast<std::size_t>(r)]) ranks.push_back(r);
  return ranks;
}

bool same_on_all_ranks(MPI_Comm comm, std::uint64_t hash) {
  std::uint64_t first = hash;
  MPI_Bcast(&first, 1, MPI_UINT64_T, 0, comm);
  return all_ranks(comm, first == hash);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) {
    if (!text.empty()) text += ',';
    text += std::to_string(r);
  }
  return text;
}

bool heard_from_every_other_rank(int tag, double bound_seconds) {
  std::vector<MPI_Request> requests;
  std::vector<int> words(static_cast<std::size_t>(world_size()));
  for (int r = 0; r < world_size(); ++r) {
    if (r == world_rank()) continue;
    requests.emplace_back();
    MPI_Irecv(&words[static_cast<std::size_t>(r)], 1, MPI_INT, r, tag, MPI_COMM_WORLD, &requests.back());
  }
  const double since = MPI_Wtime();
  int all = 0;
  while (!all && MPI_Wtime() - since < bound_seconds) {
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &all, MPI_STATUSES_IGNORE);
    if (!all) std::this_thread::yield();
  }
  for (MPI_Request& request : requests)  // (the ones that never came: nothing may be left posted)
    if (request != MPI_REQUEST_NULL) MPI_Cancel(&request), MPI_Request_free(&request);
  return all != 0;
}

}  // namespace strata::test
