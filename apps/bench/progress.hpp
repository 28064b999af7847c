// "size k of N, ETA" lines on stderr for long sweeps (rank 0 only), so a
// slow run visibly makes progress without mixing into the table on stdout.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace bench {

class Progress {
 public:
  // `sizes`: the bytes of every row, in order. Disabled: prints nothing.
  Progress(std::vector<std::size_t> sizes, bool enabled);

  // Row `index` (0-based) has just finished.
  void done(std::size_t index);
  // Clears a pending terminal line.
  void finish();

 private:
  std::vector<std::size_t> sizes_;
  bool enabled_;
  bool tty_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_, last_row_, last_print_;
};

}  // namespace bench
