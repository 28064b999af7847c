// A program of the MPI 5.0 standard ABI (built against mpi_abi.h, linked
// with libmpi_abi.so.1; tests/interpose/meson.build): which MPI it runs on
// is chosen when it starts, by the libmpi_abi.so.1 the loader finds
// (check_abi.py runs the same binary on MPICH 5 and Intel MPI, with and
// without libstrata_mpi_abi.so preloaded). It knows nothing about strata.
//
// Blocking all-reduce, reduce, broadcast, all-gather and reduce-scatter-block
// and a persistent all-reduce started 4 times, on doubles and ints, each
// checked against a closed-form reference (every rank contributes
// rank + i + 1). Prints the MPI library's version line, then one line per
// rank: "abi: rank R: P of C checks passed" (the MPI test harness's
// RankChecks, whose core this program compiles against mpi_abi.h). Exits 1
// on a failed check.
#include <mpi_abi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// The MPI harness's core, its sources compiled with this program against
// mpi_abi.h (STRATA_TEST_MPI_ABI, tests/interpose/meson.build).
#include "harness_checks.hpp"

namespace {

int rank = 0, size = 1;

// Sum over ranks of (r + i + 1).
double sum_at(int i) { return size * (i + 1.0) + size * (size - 1) / 2.0; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every MPI call here is under test: each rank finishes alone.
  strata::test::RankChecks checks("abi", 120);
  const auto check = [&](bool ok, const char* what) { checks.check(ok, what); };
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string first(version, static_cast<std::size_t>(length));
    first = first.substr(0, first.find('\n'));
    std::printf("abi: library: %s\n", first.c_str());
    std::fflush(stdout);
  }

  const int n = 4096;  // doubles: 32 KiB
  std::vector<double> in(n), out(n);
  std::vector<int> ints(n), int_out(n);
  for (int i = 0; i < n; ++i) {
    in[i] = rank + i + 1.0;
    ints[i] = rank + i + 1;
  }

  MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && out[i] == sum_at(i);
  check(ok, "MPI_Allreduce MPI_DOUBLE MPI_SUM");

  MPI_Allreduce(MPI_IN_PLACE, ints.data(), n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ok = true;
  for (int i = 0; i < n; ++i) ok = ok && ints[i] == size - 1 + i + 1;
  check(ok, "MPI_Allreduce in place MPI_INT MPI_MAX");

  const int root = size - 1;
  std::fill(out.begin(), out.end(), -1.0);
  MPI_Reduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
  ok = true;
  if (rank == root)
    for (int i = 0; i < n; ++i) ok = ok && out[i] == sum_at(i);
  check(ok, "MPI_Reduce MPI_DOUBLE MPI_SUM");

  for (int i = 0; i < n; ++i) ints[i] = rank == 0 ? 7 * i : -1;
  MPI_Bcast(ints.data(), n, MPI_INT, 0, MPI_COMM_WORLD);
  ok = true;
  for (int i = 0; i < n; ++i) ok = ok && ints[i] == 7 * i;
  check(ok, "MPI_Bcast MPI_INT");

  const int block = 256;
  std::vector<int> mine(block, rank * 3 + 1), gathered(static_cast<std::size_t>(block) * size, -1);
  MPI_Allgather(mine.data(), block, MPI_INT, gathered.data(), block, MPI_INT, MPI_COMM_WORLD);
  ok = true;
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < block; ++i) ok = ok && gathered[static_cast<std::size_t>(r) * block + i] == r * 3 + 1;
  check(ok, "MPI_Allgather MPI_INT");

  std::vector<double> blocks(static_cast<std::size_t>(block) * size), mine_sum(block, -1.0);
  for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = rank + static_cast<double>(i) + 1.0;
  MPI_Reduce_scatter_block(blocks.data(), mine_sum.data(), block, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ok = true;
  for (int i = 0; i < block; ++i) ok = ok && mine_sum[i] == sum_at(rank * block + i);
  check(ok, "MPI_Reduce_scatter_block MPI_DOUBLE MPI_SUM");

  // Persistent: the buffers are read at each MPI_Start, so each turn's
  // input differs.
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Allreduce_init(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
  for (int turn = 0; turn < 4; ++turn) {
    for (int i = 0; i < n; ++i) in[i] = rank + i + 1.0 + turn;
    std::fill(out.begin(), out.end(), -1.0);
    MPI_Start(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    ok = true;
    for (int i = 0; i < n; ++i) ok = ok && out[i] == sum_at(i) + size * turn;
    check(ok, "MPI_Allreduce_init MPI_DOUBLE MPI_SUM (a turn)");
  }
  MPI_Request_free(&request);

  const int status = checks.finish_rank();
  MPI_Finalize();
  return status;
}
