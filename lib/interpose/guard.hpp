// Re-entrancy guard. strata itself calls MPI_Allreduce, MPI_Bcast, ...
// (topology discovery, shared-memory setup, its `mpi` algorithm). With the
// interposer loaded those calls would land in the interposer again and be
// routed back into strata. Two independent checks send them straight to
// PMPI_*:
//   - a thread_local depth, raised while the interposer itself runs strata
//     code on this thread (InsideStrata);
//   - the caller's address: a call made from libstrata's own code, which
//     happens when the application uses strata directly (strata-bench, the
//     README example) and the interposer is preloaded as well.
#pragma once

namespace strata::interpose {

// While alive, this thread counts as running inside strata. Nestable.
class InsideStrata {
 public:
  InsideStrata();
  ~InsideStrata();
  InsideStrata(const InsideStrata&) = delete;
  InsideStrata& operator=(const InsideStrata&) = delete;
};

// True when an intercepted MPI function must go straight to PMPI_* because
// it was called by strata: this thread is inside an InsideStrata scope, or
// `caller` (the intercepted function's return address) lies in libstrata's
// executable code. Never throws; lock-free after the first call.
bool called_by_strata(const void* caller) noexcept;

}  // namespace strata::interpose
