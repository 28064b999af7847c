// Timing loops: collective calls (max over ranks, median over iterations)
// and the memcpy reference.
#include "timing.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace bench {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

}  // namespace

Timing time_collective(MPI_Comm comm, int warmup, int iters, const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> seconds(static_cast<std::size_t>(iters));
  for (auto& s : seconds) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    call();
    s = MPI_Wtime() - start;
  }
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), iters, MPI_DOUBLE, MPI_MAX, comm);
  Timing t;
  t.median_us = median(seconds) * 1e6;
  t.min_us = *std::min_element(seconds.begin(), seconds.end()) * 1e6;
  t.max_us = *std::max_element(seconds.begin(), seconds.end()) * 1e6;
  return t;
}

double memcpy_gbps(std::size_t bytes, int iters) {
  if (bytes == 0) return 0;
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // touched, so page faults are not timed
  std::memcpy(dst.data(), src.data(), bytes);
  std::vector<double> seconds(static_cast<std::size_t>(std::max(iters, 1)));
  for (auto& s : seconds) {
    const double start = MPI_Wtime();
    std::memcpy(dst.data(), src.data(), bytes);
    s = MPI_Wtime() - start;
    // Keep the copy observable so the compiler cannot drop it.
    asm volatile("" : : "r"(dst.data()) : "memory");
  }
  return static_cast<double>(bytes) / median(seconds) / 1e9;
}

}  // namespace bench
