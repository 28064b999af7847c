// What the test double reads from its environment, once per process. Every
// knob is a STRATA_FAKE_* variable (docs/GPU.md, "The test double"):
//   STRATA_FAKE_GPUS=N            devices this process sees (default 0: no GPU)
//   STRATA_FAKE_COMPUTE_MODES=..  compute mode per device ("0,0,3"; default all 0)
//   STRATA_FAKE_MEMORY_MB=M       memory of each device (default 4096)
//   STRATA_FAKE_SEED=S            seed of the random delays (default 1)
//   STRATA_FAKE_DELAY_US=D        longest usual delay before a stream operation (default 40)
//   STRATA_FAKE_HANG_SECONDS=T    a wait that real CUDA or NCCL would never end is
//                                 reported and the process aborted after T s (default 60)
//   STRATA_FAKE_FAULTS=...        injected faults (faults.hpp)
//   STRATA_FAKE_TRACE=1           print every call
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpu_double {

struct Settings {
  int devices = 0;
  std::vector<int> compute_modes;  // by device; missing entries are 0 (default mode)
  std::size_t memory_bytes = std::size_t(4096) << 20;
  std::uint64_t seed = 1;
  unsigned delay_us = 40;
  double hang_seconds = 60;
  std::string faults;
  bool trace = false;
  // The launcher's rank of this process (OMPI_COMM_WORLD_RANK, PMIX_RANK,
  // PMI_RANK, SLURM_PROCID; 0 without one): names the process in messages
  // and picks the rank a fault applies to.
  int world_rank = 0;
};

// Read once, on first use; a malformed value is reported and the process
// stops (a test double that guesses would hide the test's intent).
const Settings& settings();

}  // namespace gpu_double
