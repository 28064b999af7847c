// Paired in-process timing of the call check (scripts/check_cost.py
// --paired builds and runs it): the same f32 max all-reduce through a
// communicator with the check on, one with it off, and MPI_Allreduce, in
// alternating blocks, so that slow drifts of the machine hit all three
// alike. Per block: the slowest rank's mean time per call; the medians over
// the blocks are printed, and the median of the per-block on/off ratios.
//   build/strata-launch -n 2 paired ITERATIONS_PER_BLOCK COUNT BLOCKS
#include <mpi.h>
#include <strata/strata.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
template <typename F> double block(int n, F f) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return us;
}
double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = std::atoi(argv[1]); const std::size_t count = std::atol(argv[2]); const int rounds = std::atoi(argv[3]);
  {
    strata::Communicator on(MPI_COMM_WORLD, strata::Config{.check_calls = true});
    strata::Communicator off(MPI_COMM_WORLD, strata::Config{.check_calls = false});
    std::vector<float> x(count, 1.0f);
    const strata::Tensor t{x.data(), count, strata::DataType::f32};
    auto s_on = [&] { on.all_reduce(t, t, strata::ReduceOp::max); };
    auto s_off = [&] { off.all_reduce(t, t, strata::ReduceOp::max); };
    auto mpi = [&] { MPI_Allreduce(MPI_IN_PLACE, x.data(), (int)count, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD); };
    block(n, s_on); block(n, s_off); block(n, mpi);
    std::vector<double> a, b, c, ratio;
    for (int r = 0; r < rounds; ++r) {
      a.push_back(block(n, s_on)); b.push_back(block(n, s_off)); c.push_back(block(n, mpi));
      ratio.push_back(a.back() / b.back());
    }
    if (on.rank() == 0)
      std::printf("%zu B: check on %.3f us, off %.3f us, MPI %.3f us; on/off median %+.1f%%, MPI/on %.2fx\n",
                  count * 4, median(a), median(b), median(c), 100 * (median(ratio) - 1), median(c) / median(a));
  }
  MPI_Finalize();
}
