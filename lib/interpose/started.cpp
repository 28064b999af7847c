#include "started.hpp"

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "errors.hpp"
#include "log.hpp"
#include "repeat.hpp"
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
  if (std::exception_ptr error = make(*r)) {
    remove_routed(r);
    return report_error(call, comm, error);
  }
  if (!persistent) mark_started(*r);
  *request = r->handle;
  return MPI_SUCCESS;
}

// A persistent request whose communicator strata could not start on: each
// later run goes through MPI as its first did (Routed::begin, set again).
template <typename ThroughMpi>
void through_mpi_each_run(Routed& r, ThroughMpi through_mpi, Seat seat) {
  r.begin = [through_mpi, seat](Routed& again) -> std::optional<int> {
    through_mpi_each_run(again, through_mpi, seat);
    return through_mpi(again.staged, seat);
  };
}

// A routed request's making, after its call's decision `d`:
//   to_mpi():                   the call made by MPI (PMPI_I..., or the
//                               persistent init), where it goes there;
//   stage(seat, staged):        its staging (staging.hpp);
//   make(entry, staged):        strata's Request over the staged buffers,
//                               started (bound, for a `persistent` one);
//   through_mpi(staged, seat):  one run through MPI's blocking form (on the
//                               staged bytes, or the program's buffers where
//                               the datatype is predefined), MPI's code.
// On a communicator with a strata side the request is made here. On one
// without, the side is made when the request's (first) run comes in a
// completion call (Routed::begin), not here. Making it is collective (it
// duplicates the communicator), and Open MPI agrees on one new
// communicator's id at a time per process; MPI lets ranks start an
// MPI_Comm_idup before this call or after it, so a rank whose earlier idup
// goes first would wait here for a rank that waits here for it (MPICH's
// comm_idup_iallreduce). By the completion call every rank has started
// what it started before it. `make` and `through_mpi` are kept by value
// for then.
template <typename ToMpi, typename Stage, typename Make, typename ThroughMpi>
int start_call(const char* call, const CallKey& key, const KnownRoute* known, bool persistent, Decision& d,
               const CallTerms& terms, ToMpi to_mpi, Stage stage, Make make, ThroughMpi through_mpi,
               MPI_Request* request) {
  const MPI_Comm comm = key.comm;
  CommEntry* entry = known ? known->entry : d.to_strata() ? find_entry_fast(comm) : nullptr;
  if (entry && !entry->strata) {
    d.why = Why::unavailable;
    d.detail = entry->unavailable.c_str();
  }
  if (!d.to_strata()) {
    log_to_mpi(call, comm, d, terms.type, terms.op, terms.sendtype);
    return to_mpi();
  }
  if (entry) {
    log_to_strata(call, *entry, d, terms.collective, terms.type, terms.op, terms.sendtype);
    if (entry->strata && !known) remember(key, entry, d);
  }
  const Seat seat = entry ? entry->seat : seat_in(comm);
  Staged s;
  const int rc = stage(seat, s);
  if (entry)
    return start_request(call, comm, persistent, rc, std::move(s),
                         [&](Routed& r) { return run_in_strata([&] { r.request = make(*entry, r.staged); }); },
                         request);
  std::string described = logging(Level::info) ? describe_call(terms) : std::string();
  auto begin = [call, comm, d, collective = terms.collective, described = std::move(described), seat, make,
                through_mpi](Routed& r) -> std::optional<int> {
    CommEntry& made = entry_for(comm);
    if (!made.strata) {
      Decision why = d;
      why.why = Why::unavailable;
      why.detail = made.unavailable.c_str();
      log_unavailable(call, comm, why, described);
      if (r.persistent) through_mpi_each_run(r, through_mpi, seat);
      return through_mpi(r.staged, seat);
    }
    log_to_strata(call, made, d, collective, described);
    if (std::exception_ptr error = run_in_strata([&] {
          r.request = make(made, r.staged);
          if (r.persistent) r.request.start();
        }))
      std::rethrow_exception(error);
    return std::nullopt;
  };
  return start_request(call, comm, persistent, rc, std::move(s),
                       [&](Routed& r) -> std::exception_ptr {
                         try {
                           r.begin = std::move(begin);
                         } catch (...) {
                           return std::current_exception();
                         }
                         return nullptr;
                       },
                       request);
}

// MPI's blocking all-gather of bytes over a started MPI_Iallgather's
// staged buffers, then the staging's finish step.
int all_gather_through_mpi(Staged& t, std::size_t bytes, Seat seat, MPI_Comm comm) {
  const int count = static_cast<int>(bytes);
  const void* own_block = static_cast<const unsigned char*>(t.out.data) + static_cast<std::size_t>(seat.rank) * bytes;
  const void* send = t.in.data == own_block ? MPI_IN_PLACE : t.in.data;
  int rc = PMPI_Allgather(send, count, MPI_BYTE, t.out.data, count, MPI_BYTE, comm);
  if (rc == MPI_SUCCESS && t.finish) rc = t.finish();
  return rc;
}

}  // namespace

int iall_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  const CallKey key{Collective::all_reduce, sendbuf, recvbuf, count, type, op, kAllRanks, comm};
  Recalled recalled = recall(key, [&] { return decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm); });
  Decision& d = recalled.decision;
  return start_call(
      "MPI_Iallreduce", key, recalled.known, false, d, {type, &op, Collective::all_reduce},
      [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request); },
      [&](Seat seat, Staged& s) { return stage_reduction(sendbuf, recvbuf, d, kAllRanks, seat, s); },
      [op = d.op](CommEntry& e, const Staged& t) { return e.strata->iall_reduce(t.in, t.out, op, call_options()); },
      [=](Staged&, Seat) { return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm); }, request);
}

int ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
            MPI_Request* request) {
  const CallKey key{Collective::reduce, sendbuf, recvbuf, count, type, op, root, comm};
  Recalled recalled = recall(key, [&] { return decide_reduction(sendbuf, recvbuf, count, type, op, root, comm); });
  Decision& d = recalled.decision;
  return start_call(
      "MPI_Ireduce", key, recalled.known, false, d, {type, &op, Collective::reduce},
      [&] { return PMPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm, request); },
      [&](Seat seat, Staged& s) { return stage_reduction(sendbuf, recvbuf, d, root, seat, s); },
      [op = d.op, root](CommEntry& e, const Staged& t) {
        return e.strata->ireduce(t.in, t.out, op, root, call_options());
      },
      [=](Staged&, Seat) { return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm); }, request);
}

int ibroadcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  const CallKey key{Collective::broadcast, buffer, nullptr, count, type, MPI_OP_NULL, root, comm};
  Recalled recalled = recall(key, [&] { return decide_broadcast(buffer, count, type, root, comm); });
  Decision& d = recalled.decision;
  return start_call(
      "MPI_Ibcast", key, recalled.known, false, d, {type, nullptr, Collective::broadcast},
      [&] { return PMPI_Ibcast(buffer, count, type, root, comm, request); },
      [&](Seat seat, Staged& s) {
        return stage_broadcast(buffer, count, type, d, root, comm, seat, /*started=*/true, s);
      },
      [root](CommEntry& e, const Staged& t) { return e.strata->ibroadcast(t.out, root, call_options()); },
      // (the staged bytes: the program may have freed a derived datatype)
      [root, comm, bytes = static_cast<int>(d.count)](Staged& t, Seat) {
        int rc = PMPI_Bcast(t.out.data, bytes, MPI_BYTE, root, comm);
        if (rc == MPI_SUCCESS && t.finish) rc = t.finish();
        return rc;
      },
      request);
}

int ireduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                          MPI_Request* request) {
  const CallKey key{Collective::reduce_scatter, sendbuf, recvbuf, count, type, op, kAllRanks, comm};
  Recalled recalled = recall(key, [&] { return decide_reduce_scatter(sendbuf, recvbuf, count, type, op, comm); });
  Decision& d = recalled.decision;
  return start_call(
      "MPI_Ireduce_scatter_block", key, recalled.known, false, d, {type, &op, Collective::reduce_scatter},
      [&] { return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, count, type, op, comm, request); },
      [&](Seat seat, Staged& s) { return stage_reduce_scatter(sendbuf, recvbuf, d, seat, s); },
      [op = d.op](CommEntry& e, const Staged& t) {
        return e.strata->ireduce_scatter(t.in, t.out, op, call_options());
      },
      [=](Staged&, Seat) { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm); }, request);
}

int iall_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const CallKey key{Collective::all_gather, sendbuf,   recvbuf,  recvcount, recvtype,
                    MPI_OP_NULL,           kAllRanks, comm,     sendcount, sendtype};
  Recalled recalled = recall(
      key, [&] { return decide_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
  Decision& d = recalled.decision;
  const MPI_Datatype shown_sendtype = sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype;
  return start_call(
      "MPI_Iallgather", key, recalled.known, false, d, {recvtype, nullptr, Collective::all_gather, shown_sendtype},
      [&] { return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request); },
      [&](Seat seat, Staged& s) {
        return stage_all_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, d, comm, seat,
                                /*started=*/true, s);
      },
      [](CommEntry& e, const Staged& t) { return e.strata->iall_gather(t.in, t.out, call_options()); },
      [comm, bytes = d.count](Staged& t, Seat seat) { return all_gather_through_mpi(t, bytes, seat, comm); },
      request);
}

int all_reduce_init(const char* call, AllReduceInit fall_through, const void* sendbuf, void* recvbuf, int count,
                    MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  const CallKey key{Collective::all_reduce, sendbuf, recvbuf, count, type, op, kAllRanks, comm};
  Recalled recalled = recall(key, [&] { return decide_reduction(sendbuf, recvbuf, count, type, op, kAllRanks, comm); });
  Decision& d = recalled.decision;
  return start_call(
      call, key, recalled.known, true, d, {type, &op, Collective::all_reduce},
      [&] { return fall_through(sendbuf, recvbuf, count, type, op, comm, info, request); },
      [&](Seat seat, Staged& s) { return stage_reduction(sendbuf, recvbuf, d, kAllRanks, seat, s); },
      [op = d.op](CommEntry& e, const Staged& t) {
        return e.strata->all_reduce_init(t.in, t.out, op, call_options());
      },
      [=](Staged&, Seat) { return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm); }, request);
}

}  // namespace strata::interpose
