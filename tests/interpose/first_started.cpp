// A plain MPI program (it knows nothing about strata) whose first
// collective on each communicator is a non-blocking one, started beside
// what MPI lets ranks do around it in any order: an MPI_Comm_idup that
// some ranks start before the call and others after it, a derived datatype
// freed right after the call. Under the interposer each of these is the
// call that makes the communicator's strata side (docs/INTERPOSER.md,
// "Progress"). Every result is checked against values each rank can
// compute; the runs are bounded by the caller (check_interpose.py).
//
//   first_started [--strata]
//
// --strata: libstrata_mpi.so is preloaded, so also free a communicator
// before its first call completes, which MPI allows but Open MPI 4.1's own
// non-blocking collectives do not survive (a segmentation fault in its
// progress engine); the interposer runs its routed requests before
// MPI_Comm_free.
//
// Prints "first_started: rank R: N of M checks passed" (exit 0 when all
// pass), one line per failure, and on rank 0 which persistent all-reduce it
// used: "first_started: persistent all-reduce: MPI_Allreduce_init" (where
// the MPI library has it), "MPIX_Allreduce_init" (Open MPI 4.1's extension)
// or "none".
#include <cstdio>
#include <cstring>
#include <vector>

#include "program_checks.hpp"

namespace {

using program_checks::check;
using program_checks::rank;
int size = 1;

MPI_Comm fresh() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return comm;
}

// The first non-blocking call on `first`, and an MPI_Comm_idup of `parent`:
// rank 0 starts the call first, the others the idup first. Open MPI agrees
// on one new communicator's id at a time in a process, the one made from
// the lowest-numbered communicator first.
void beside_idup(MPI_Comm first, MPI_Comm parent, const char* what) {
  int in = rank + 1, out = 0;
  MPI_Comm made;
  MPI_Request requests[2];
  if (rank == 0) {
    MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, first, &requests[0]);
    MPI_Comm_idup(parent, &made, &requests[1]);
  } else {
    MPI_Comm_idup(parent, &made, &requests[1]);
    MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, first, &requests[0]);
  }
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  check(out == size * (size + 1) / 2, "%s: sum %d, expected %d", what, out, size * (size + 1) / 2);
  int made_size = 0;
  MPI_Comm_size(made, &made_size);
  check(made_size == size, "%s: the idup's communicator has %d ranks", what, made_size);
  MPI_Comm_free(&made);
}

// A persistent all-reduce made first on `first`, beside an MPI_Comm_idup
// of `later` (made after it) that rank 0 starts after the init and the
// others before it; started three times, the first completion waiting for
// the idup too.
void persistent_beside_idup(MPI_Comm first, MPI_Comm later) {
  const program_checks::PersistentAllReduce init = program_checks::persistent_all_reduce();
  if (init.call == nullptr) return;
  int in = rank + 1, out = 0;
  MPI_Comm made;
  MPI_Request requests[2];
  if (rank == 0) {
    init.call(&in, &out, 1, MPI_INT, MPI_SUM, first, MPI_INFO_NULL, &requests[0]);
    MPI_Comm_idup(later, &made, &requests[1]);
  } else {
    MPI_Comm_idup(later, &made, &requests[1]);
    init.call(&in, &out, 1, MPI_INT, MPI_SUM, first, MPI_INFO_NULL, &requests[0]);
  }
  for (int turn = 0; turn < 3; ++turn) {
    in = rank + 1 + turn;
    MPI_Start(&requests[0]);
    if (turn == 0)
      MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    else
      MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    const int expected = size * (size + 1) / 2 + size * turn;
    check(out == expected, "%s beside an idup, turn %d: %d, expected %d", init.name, turn, out, expected);
  }
  MPI_Request_free(&requests[0]);
  MPI_Comm_free(&made);
}

// MPI_Ibcast of every other int of 16 through a vector datatype freed
// right after the call, from the last rank.
void broadcast_freed_type(MPI_Comm comm) {
  const int root = size - 1;
  MPI_Datatype every_other;
  MPI_Type_vector(8, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  std::vector<int> data(16, -1);
  if (rank == root)
    for (int i = 0; i < 16; i += 2) data[i] = 100 + i;
  MPI_Request request;
  MPI_Ibcast(data.data(), 1, every_other, root, comm, &request);
  MPI_Type_free(&every_other);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  for (int i = 0; i < 16; ++i) {
    const int expected = i % 2 == 0 ? 100 + i : -1;
    check(data[i] == expected, "MPI_Ibcast, freed datatype: [%d] = %d, expected %d", i, data[i], expected);
  }
}

// MPI_Iallgather in place of three ints per rank through a contiguous
// datatype freed right after the call.
void all_gather_freed_type(MPI_Comm comm) {
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_INT, &three);
  MPI_Type_commit(&three);
  std::vector<int> data(static_cast<std::size_t>(3 * size), -1);
  for (int k = 0; k < 3; ++k) data[static_cast<std::size_t>(3 * rank + k)] = 10 * rank + k;
  MPI_Request request;
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), 1, three, comm, &request);
  MPI_Type_free(&three);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  for (int r = 0; r < size; ++r)
    for (int k = 0; k < 3; ++k)
      check(data[static_cast<std::size_t>(3 * r + k)] == 10 * r + k, "MPI_Iallgather, freed datatype: [%d] = %d",
            3 * r + k, data[static_cast<std::size_t>(3 * r + k)]);
}

// MPI_Ireduce and MPI_Ireduce_scatter_block, each the first call on its
// communicator, completed by one MPI_Waitall listing them in reverse.
void reduce_and_scatter(MPI_Comm a, MPI_Comm b) {
  const int root = 1 % size, count = 1000;
  std::vector<double> in(count), out(count, -1);
  for (int i = 0; i < count; ++i) in[static_cast<std::size_t>(i)] = rank + 0.25 * i;
  std::vector<int> blocks(static_cast<std::size_t>(2 * size));
  for (int i = 0; i < 2 * size; ++i) blocks[static_cast<std::size_t>(i)] = rank * 1000 + i;
  MPI_Request requests[2];
  MPI_Ireduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, root, a, &requests[1]);
  MPI_Ireduce_scatter_block(MPI_IN_PLACE, blocks.data(), 2, MPI_INT, MPI_SUM, b, &requests[0]);
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  const double ranks_sum = size * (size - 1) / 2.0;
  if (rank == root)
    for (int i = 0; i < count; i += 37)
      check(out[static_cast<std::size_t>(i)] == ranks_sum + size * 0.25 * i, "MPI_Ireduce: [%d] = %g", i,
            out[static_cast<std::size_t>(i)]);
  for (int k = 0; k < 2; ++k) {
    const int i = 2 * rank + k, expected = static_cast<int>(ranks_sum) * 1000 + size * i;
    check(blocks[static_cast<std::size_t>(k)] == expected, "MPI_Ireduce_scatter_block: [%d] = %d, expected %d", k,
          blocks[static_cast<std::size_t>(k)], expected);
  }
}

// MPI_Iallreduce, then the communicator freed before the wait: MPI lets
// a pending collective complete normally.
void freed_before_wait() {
  MPI_Comm comm = fresh();
  long long in = rank + 1, out = 0;
  MPI_Request request;
  MPI_Iallreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, comm, &request);
  MPI_Comm_free(&comm);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  check(out == size * (size + 1) / 2, "MPI_Iallreduce, communicator freed before the wait: %lld", out);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool strata = argc > 1 && std::strcmp(argv[1], "--strata") == 0;
  program_checks::start("first_started", 120);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // First: MPI_COMM_WORLD's first call, beside an idup of a communicator
  // made after it (a higher id), then a new communicator's first call
  // beside an idup of MPI_COMM_WORLD (the lowest id).
  MPI_Comm later = fresh();
  beside_idup(MPI_COMM_WORLD, later, "MPI_COMM_WORLD's first call beside an idup of a dup");
  MPI_Comm first = fresh();
  beside_idup(first, MPI_COMM_WORLD, "a dup's first call beside an idup of MPI_COMM_WORLD");
  MPI_Comm_free(&first);
  MPI_Comm_free(&later);
  MPI_Comm persistent = fresh(), after = fresh();
  persistent_beside_idup(persistent, after);
  MPI_Comm_free(&persistent);
  MPI_Comm_free(&after);

  MPI_Comm broadcast = fresh(), gather = fresh(), reduce = fresh(), scatter = fresh();
  broadcast_freed_type(broadcast);
  all_gather_freed_type(gather);
  reduce_and_scatter(reduce, scatter);
  if (strata) freed_before_wait();
  // A blocking call on a communicator whose strata side a started call made.
  int in = 2, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, broadcast);
  check(out == 2 * size, "MPI_Allreduce after the started calls: %d", out);
  for (MPI_Comm* comm : {&broadcast, &gather, &reduce, &scatter}) MPI_Comm_free(comm);

  if (rank == 0) std::printf("first_started: persistent all-reduce: %s\n", program_checks::persistent_all_reduce().name);
  const int status = program_checks::passed();
  MPI_Finalize();
  return status;
}
