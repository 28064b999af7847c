// ETA model: a row's time grows at most linearly with its size (bandwidth
// bound) and never shrinks below the last row's (latency bound), so the
// remaining time is estimated as sum(last_row_time * max(1, size_k / size_last)).
// It overestimates while rows are latency bound and becomes accurate where it
// matters, on the large rows that dominate a sweep.
#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "options.hpp"

namespace bench {

using Clock = std::chrono::steady_clock;

Progress::Progress(std::vector<std::size_t> sizes, bool enabled)
    : sizes_(std::move(sizes)), enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {
  start_ = last_row_ = last_print_ = Clock::now();
}

void Progress::done(std::size_t index) {
  const auto now = Clock::now();
  const double row_seconds = std::chrono::duration<double>(now - last_row_).count();
  last_row_ = now;
  if (!enabled_ || index + 1 >= sizes_.size()) return;
  // Short sweeps stay quiet; after that, at most one line every 2 s (a
  // terminal line is rewritten in place, so it may update every row).
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (elapsed < 2 || (!tty_ && since_print < 2)) return;
  last_print_ = now;

  const double last = static_cast<double>(std::max<std::size_t>(sizes_[index], 1));
  double eta = 0;
  for (std::size_t k = index + 1; k < sizes_.size(); ++k)
    eta += row_seconds * std::max(1.0, static_cast<double>(sizes_[k]) / last);
  const std::string text = fmt::format("strata-bench: size {} of {} done ({}), {:.0f} s elapsed, ETA {:.0f} s", index + 1,
                                       sizes_.size(), human_bytes(sizes_[index]), elapsed, eta);
  if (tty_) {
    fmt::print(stderr, "\r{:<78}", text);
    printed_ = true;
  } else {
    fmt::print(stderr, "{}\n", text);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (printed_) fmt::print(stderr, "\r{:<78}\r", "");
  printed_ = false;
}

}  // namespace bench
