#include "collectives.hpp"

#include <exception>

#include "errors.hpp"
#include "repeat.hpp"
#include "requests.hpp"
#include "route.hpp"
#include "staging.hpp"

namespace strata::interpose {
namespace {

// Runs a routed blocking call: strata's collective (`run`, on the staged
// tensors) and then the staging's finish step. MPI_SUCCESS, or the code of
// strata's error (reported) or of a failed pack/unpack (already reported by
// MPI's error handler).
template <typename Run>
int run_staged(const char* call, MPI_Comm comm, int staged_rc, const Staged& s, Run run) {
  if (staged_rc != MPI_SUCCESS) return staged_rc;
  if (std::exception_ptr error = run_in_strata(run)) return report_error(call, comm, error);
  return s.finish ? s.finish() : MPI_SUCCESS;
}

// The entry and decision of a call that may repeat the last of its kind:
// remembered (repeat.hpp), or decided now (`decide`) and routed. nullptr
// when the call went to MPI (`to_mpi`; `answer` holds MPI's return code).
template <typename Decide, typename ToMpi>
CommEntry* decided(const char* call, const CallKey& key, const CallTerms& terms, Decide&& decide, ToMpi&& to_mpi,
                   Decision& d, int& answer) {
  const Recalled recalled = recall(key, decide);
  d = recalled.decision;
  if (recalled.known) return recalled.known->entry;
  CommEntry* entry = route(call, key.comm, d, terms, to_mpi, answer);
  if (entry) remember(key, entry, d);
  return entry;
}

}  // namespace

int all_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  advance_all_routed();
  constexpr const char* kCall = "MPI_Allreduce";
  Decision d;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = decided(
      kCall, {Collective::all_reduce, sendbuf, recvbuf, count, type, op, kAllRanks, comm},
      {type, &op, Collective::all_reduce},
      [&] { return decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm); },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm); }, d, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduction(sendbuf, recvbuf, d, kAllRanks, entry->seat, s);
  return run_staged(kCall, comm, rc, s, [&] { entry->strata->all_reduce(s.in, s.out, d.op, call_options()); });
}

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  advance_all_routed();
  constexpr const char* kCall = "MPI_Reduce";
  Decision d;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = decided(
      kCall, {Collective::reduce, sendbuf, recvbuf, count, type, op, root, comm}, {type, &op, Collective::reduce},
      [&] { return decide_reduction(sendbuf, recvbuf, count, type, op, root, comm); },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm); }, d, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduction(sendbuf, recvbuf, d, root, entry->seat, s);
  return run_staged(kCall, comm, rc, s, [&] { entry->strata->reduce(s.in, s.out, d.op, root, call_options()); });
}

int broadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  advance_all_routed();
  constexpr const char* kCall = "MPI_Bcast";
  Decision d;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = decided(
      kCall, {Collective::broadcast, buffer, nullptr, count, type, MPI_OP_NULL, root, comm},
      {type, nullptr, Collective::broadcast}, [&] { return decide_broadcast(buffer, count, type, root, comm); },
      [&] { return PMPI_Bcast(buffer, count, type, root, comm); }, d, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_broadcast(buffer, count, type, d, root, comm, entry->seat, /*started=*/false, s);
  return run_staged(kCall, comm, rc, s, [&] { entry->strata->broadcast(s.out, root, call_options()); });
}

int reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  advance_all_routed();
  constexpr const char* kCall = "MPI_Reduce_scatter_block";
  Decision d;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = decided(
      kCall, {Collective::reduce_scatter, sendbuf, recvbuf, count, type, op, kAllRanks, comm},
      {type, &op, Collective::reduce_scatter},
      [&] { return decide_reduce_scatter(sendbuf, recvbuf, count, type, op, comm); },
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm); }, d, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduce_scatter(sendbuf, recvbuf, d, entry->seat, s);
  return run_staged(kCall, comm, rc, s, [&] { entry->strata->reduce_scatter(s.in, s.out, d.op, call_options()); });
}

int all_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm) {
  advance_all_routed();
  constexpr const char* kCall = "MPI_Allgather";
  const MPI_Datatype shown_sendtype = sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype;
  Decision d;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = decided(
      kCall,
      {Collective::all_gather, sendbuf, recvbuf, recvcount, recvtype, MPI_OP_NULL, kAllRanks, comm, sendcount,
       sendtype},
      {recvtype, nullptr, Collective::all_gather, shown_sendtype},
      [&] { return decide_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); }, d, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, d, comm, entry->seat,
                                  /*started=*/false, s);
  return run_staged(kCall, comm, rc, s, [&] { entry->strata->all_gather(s.in, s.out, call_options()); });
}

}  // namespace strata::interpose
