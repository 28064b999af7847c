// Timing loops shared by the apps: collective calls (max over ranks, median over iterations)
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
  return time_alternating(comm, warmup, iters, {call}).front();
}

std::vector<Timing> time_alternating(MPI_Comm comm, int warmup, int iters,
                                     const std::vector<std::function<void()>>& calls) {
  for (int i = 0; i < warmup; ++i)
    for (const auto& call : calls) call();
  const std::size_t n = static_cast<std::size_t>(iters);
  // seconds[c * iters + i]: call c's iteration i, so one MPI_Allreduce takes every maximum.
  std::vector<double> seconds(calls.size() * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t turn = 0; turn < calls.size(); ++turn) {
      // Odd iterations reverse the order (A B, B A, ...), so that going
      // first or second after the previous call weighs on every call alike.
      const std::size_t c = i % 2 ? calls.size() - 1 - turn : turn;
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      calls[c]();
      seconds[c * n + i] = MPI_Wtime() - start;
    }
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX, comm);
  std::vector<Timing> timings;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const std::vector<double> mine(seconds.begin() + static_cast<std::ptrdiff_t>(c * n),
                                   seconds.begin() + static_cast<std::ptrdiff_t>((c + 1) * n));
    Timing t;
    t.median_us = median(mine) * 1e6;
    t.min_us = *std::min_element(mine.begin(), mine.end()) * 1e6;
    t.max_us = *std::max_element(mine.begin(), mine.end()) * 1e6;
    timings.push_back(t);
  }
  return timings;
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
