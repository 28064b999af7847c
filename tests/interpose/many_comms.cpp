// A plain MPI program (it knows nothing about strata) that makes the
// communicators real applications make: MPI_COMM_WORLD, a duplicate, a
// split by parity, a split without rank 0, MPI_COMM_SELF, a split into
// single ranks, a duplicate made, used and freed three times over, and one
// call repeated on communicators made and freed in turn. It
// all-reduces on each with its own datatype and op, so that a log line
// says which communicator it is about, checks the sums, and prints per
// communicator which world ranks hold it:
//   many_comms: rank R: comm MPI_FLOAT MPI_SUM holds 0,1,2
//   many_comms: rank R: P of N checks passed
// check_interpose.py (mode "quiet") runs it with libstrata_mpi.so preloaded.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness_core.hpp"

using strata::test::rank_check;

namespace {

int world_rank = 0;

// How many of `data` differ from `want`.
template <typename T>
int wrong_values(const T* data, std::size_t n, T want) {
  int wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += data[i] != want;
  return wrong;
}

// The world ranks `comm` holds, "0,2".
std::string members(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  MPI_Allgather(&world_rank, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  std::string text;
  for (int r : all) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

// All-reduces world_rank + 1 over `comm` as `type` with `op`, checks the
// result against the members' own sum or max, and reports the members.
template <typename T>
void reduce_on(MPI_Comm comm, MPI_Datatype type, const char* type_name, MPI_Op op, const char* op_name) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  MPI_Allgather(&world_rank, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  T want = 0;
  for (int r : all) want = op == MPI_SUM ? want + T(r + 1) : (T(r + 1) > want ? T(r + 1) : want);
  std::vector<T> data(64, T(world_rank + 1));
  MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), type, op, comm);
  rank_check(wrong_values(data.data(), data.size(), want) == 0,
             std::string("comm ") + type_name + " " + op_name + ": wrong values");
  std::printf("many_comms: rank %d: comm %s %s holds %s\n", world_rank, type_name, op_name, members(comm).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  strata::test::start_program_checks("many_comms", 120);
  world_rank = strata::test::world_rank();
  reduce_on<float>(MPI_COMM_WORLD, MPI_FLOAT, "MPI_FLOAT", MPI_SUM, "MPI_SUM");

  MPI_Comm dup, parity, without_zero, single;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  reduce_on<double>(dup, MPI_DOUBLE, "MPI_DOUBLE", MPI_SUM, "MPI_SUM");
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &parity);
  reduce_on<int>(parity, MPI_INT, "MPI_INT", MPI_SUM, "MPI_SUM");
  MPI_Comm_split(MPI_COMM_WORLD, world_rank == 0 ? MPI_UNDEFINED : 0, world_rank, &without_zero);
  if (without_zero != MPI_COMM_NULL) reduce_on<long>(without_zero, MPI_LONG, "MPI_LONG", MPI_SUM, "MPI_SUM");
  reduce_on<float>(MPI_COMM_SELF, MPI_FLOAT, "MPI_FLOAT", MPI_MAX, "MPI_MAX");
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &single);
  reduce_on<double>(single, MPI_DOUBLE, "MPI_DOUBLE", MPI_MAX, "MPI_MAX");
  for (int again = 0; again < 3; ++again) {  // as a solver making a work communicator per step
    MPI_Comm step;
    MPI_Comm_dup(MPI_COMM_WORLD, &step);
    reduce_on<int>(step, MPI_INT, "MPI_INT", MPI_MAX, "MPI_MAX");
    MPI_Comm_free(&step);
  }

  // One call repeated exactly (the same buffer, count, datatype and op) on
  // communicators made and freed in turn, whose handles MPI may hand out
  // again: a duplicate of the world, then a split by parity. Each sum must
  // be over that communicator's own members (the interposer remembers a
  // repeated call's routing, and must forget it with the communicator);
  // the same for an all-gather and a reduce-scatter (one element each).
  static unsigned same[64], gathered[64], scattered_in[64], scattered;
  for (int turn = 0; turn < 6; ++turn) {
    MPI_Comm c;
    if (turn % 2 == 0) MPI_Comm_dup(MPI_COMM_WORLD, &c);
    else MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &c);
    int size = 0;
    MPI_Comm_size(c, &size);
    std::vector<int> all(static_cast<std::size_t>(size));
    MPI_Allgather(&world_rank, 1, MPI_INT, all.data(), 1, MPI_INT, c);
    unsigned want = 0;
    for (int r : all) want += static_cast<unsigned>(r + 1);
    for (int call = 0; call < 3; ++call) {
      for (unsigned& x : same) x = static_cast<unsigned>(world_rank + 1);
      MPI_Allreduce(MPI_IN_PLACE, same, 64, MPI_UNSIGNED, MPI_SUM, c);
      rank_check(wrong_values(same, 64, want) == 0, "turn " + std::to_string(turn) + " call " + std::to_string(call) +
                                                       ": wrong values (a sum over another communicator's members?)");
      if (size > 64) continue;
      const unsigned mine = static_cast<unsigned>(world_rank + 1);
      for (unsigned& x : gathered) x = 0;
      MPI_Allgather(&mine, 1, MPI_UNSIGNED, gathered, 1, MPI_UNSIGNED, c);
      int misplaced = 0;
      for (int i = 0; i < size; ++i) misplaced += gathered[i] != static_cast<unsigned>(all[static_cast<std::size_t>(i)] + 1);
      rank_check(misplaced == 0, "turn " + std::to_string(turn) + " call " + std::to_string(call) +
                                     ": all-gather holds another communicator's blocks");
      for (unsigned& x : scattered_in) x = mine;
      MPI_Reduce_scatter_block(scattered_in, &scattered, 1, MPI_UNSIGNED, MPI_SUM, c);
      rank_check(scattered == want, "turn " + std::to_string(turn) + " call " + std::to_string(call) +
                                        ": reduce-scatter summed over another communicator's members");
    }
    MPI_Comm_free(&c);
  }

  MPI_Comm_free(&single);
  if (without_zero != MPI_COMM_NULL) MPI_Comm_free(&without_zero);
  MPI_Comm_free(&parity);
  MPI_Comm_free(&dup);
  const int status = strata::test::program_checks().finish_rank();
  MPI_Finalize();
  return status;
}
