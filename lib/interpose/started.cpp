#include "started.hpp"

#include <exception>
#include <utility>

#include "errors.hpp"
#include "requests.hpp"
#include "route.hpp"
#include "staging.hpp"

namespace strata::interpose {
namespace {

// Hands a routed call's staged buffers to a new routed request, `make`
// creating strata's Request over them (a non-blocking call starts it, a
// persistent one binds it), and returns its placeholder in *request.
// `staged_rc` is the staging's code: a failed pack has reported itself.
template <typename Make>
int start_request(const char* call, MPI_Comm comm, bool persistent, int staged_rc, Staged&& staged, Make make,
                  MPI_Request* request) {
  if (staged_rc != MPI_SUCCESS) return staged_rc;
  int rc = MPI_SUCCESS;
  Routed* r = nullptr;
  try {
    r = add_routed(call, comm, persistent, rc);
  } catch (...) {
    return report_error(call, comm, std::current_exception());
  }
  if (!r) return rc;  // PMPI_Send_init failed: MPI has reported it
  r->staged = std::move(staged);
  // (strata queues the run and checks nothing here: invalid arguments
  // surface from the completion call, on every rank, as for a blocking call.)
  if (std::exception_ptr error = run_in_strata([&] { r->request = make(r->staged); })) {
    remove_routed(r);
    return report_error(call, comm, error);
  }
  if (!persistent) mark_started(*r);
  *request = r->handle;
  return MPI_SUCCESS;
}

}  // namespace

int iall_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  constexpr const char* kCall = "MPI_Iallreduce";
  Decision d = decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm);
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(kCall, comm, d, {type, &op, Collective::all_reduce},
                           [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request); }, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduction(sendbuf, recvbuf, d, kAllRanks, *entry, s);
  return start_request(
      kCall, comm, false, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->iall_reduce(t.in, t.out, d.op, call_options()); }, request);
}

int ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
            MPI_Request* request) {
  constexpr const char* kCall = "MPI_Ireduce";
  Decision d = decide_reduction(sendbuf, recvbuf, count, type, op, root, comm);
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(kCall, comm, d, {type, &op, Collective::reduce},
                           [&] {
                             return PMPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm, request);
                           },
                           answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduction(sendbuf, recvbuf, d, root, *entry, s);
  return start_request(
      kCall, comm, false, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->ireduce(t.in, t.out, d.op, root, call_options()); }, request);
}

int ibroadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  constexpr const char* kCall = "MPI_Ibcast";
  Decision d = decide_broadcast(buffer, count, type, root, comm);
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(kCall, comm, d, {type, nullptr, Collective::broadcast},
                           [&] { return PMPI_Ibcast(buffer, count, type, root, comm, request); }, answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_broadcast(buffer, count, type, d, root, comm, *entry, /*started=*/true, s);
  return start_request(
      kCall, comm, false, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->ibroadcast(t.out, root, call_options()); }, request);
}

int ireduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                          MPI_Request* request) {
  constexpr const char* kCall = "MPI_Ireduce_scatter_block";
  Decision d = decide_reduce_scatter(sendbuf, recvbuf, count, type, op, comm);
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(kCall, comm, d, {type, &op, Collective::reduce_scatter},
                           [&] {
                             return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, request);
                           },
                           answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduce_scatter(sendbuf, recvbuf, d, *entry, s);
  return start_request(
      kCall, comm, false, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->ireduce_scatter(t.in, t.out, d.op, call_options()); }, request);
}

int iall_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  constexpr const char* kCall = "MPI_Iallgather";
  Decision d = decide_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const MPI_Datatype shown_sendtype = sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype;
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(kCall, comm, d, {recvtype, nullptr, Collective::all_gather, shown_sendtype},
                           [&] {
                             return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                                    request);
                           },
                           answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, d, comm, *entry,
                                  /*started=*/true, s);
  return start_request(
      kCall, comm, false, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->iall_gather(t.in, t.out, call_options()); }, request);
}

int all_reduce_init(const char* call, AllReduceInit fall_through, const void* sendbuf, void* recvbuf, int count,
                    MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Decision d = decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm);
  int answer = MPI_SUCCESS;  // MPI's, where the call goes there
  CommEntry* entry = route(call, comm, d, {type, &op, Collective::all_reduce},
                           [&] {
                             return fall_through(sendbuf, recvbuf, count, type, op, comm, info, request);
                           },
                           answer);
  if (!entry) return answer;
  Staged s;
  const int rc = stage_reduction(sendbuf, recvbuf, d, kAllRanks, *entry, s);
  return start_request(
      call, comm, true, rc, std::move(s),
      [&](const Staged& t) { return entry->strata->all_reduce_init(t.in, t.out, d.op, call_options()); }, request);
}

}  // namespace strata::interpose
