// A plain MPI program (it knows nothing about strata) using non-blocking
// and persistent collectives the way applications do: several outstanding
// at once, completed with every call of the MPI_Wait / MPI_Test family in
// arrays that mix them with point-to-point requests, MPI_REQUEST_NULL and
// inactive persistent requests; persistent all-reduce started many times
// (MPI_Start, MPI_Startall) beside persistent point-to-point requests;
// datatypes that must be packed; calls strata does not serve. Every result
// is checked against values computed from every rank's inputs (each rank
// can regenerate all of them), each as soon as a completion call says its
// request is complete, so a completion reported before the collective ran
// fails. Every loop is bounded.
//
//   requests [--strata] [--progress-thread]
//
// --strata: libstrata_mpi.so is preloaded, so also check what only its
// documented behaviour promises (docs/INTERPOSER.md): a request freed while
// active has completed by the time MPI_Request_free returns, ranks passing
// different counts get MPI_ERR_TRUNCATE from the completion call (in
// MPI_ERR_IN_STATUS for arrays), MPI_Start on an active request is
// MPI_ERR_REQUEST. --progress-thread: STRATA_PROGRESS_THREAD=1 as well, so a
// request also completes while its ranks make no MPI call.
//
// Prints "requests: rank R: N of M checks passed" (exit 0 when all pass),
// one line per failure, and on rank 0 which persistent all-reduce it used:
// "requests: persistent all-reduce: MPI_Allreduce_init" (where the MPI
// library has it), "MPIX_Allreduce_init" (Open MPI 4.1's extension) or "none".
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "program_checks.hpp"

namespace {

using program_checks::check;
using program_checks::rank;
int size = 1;
bool with_strata = false, progress_thread = false;
constexpr double kLoopSeconds = 60;  // bound of every test loop

// Rank r's input element i for call `tag`: small integers, so that every
// sum is exact in any order, in float and int alike.
int value(int r, int i, int tag) { return ((r + 1) * 7 + i * 3 + tag * 5) % 61 - 30; }

// One collective or point-to-point operation of a test: start() makes its
// request, verify() checks its results (called once the request was
// reported complete), verify_status() what MPI says about it.
struct Op {
  std::string name;
  MPI_Request request = MPI_REQUEST_NULL;
  std::function<void(Op&)> start_fn;
  std::function<void(Op&)> verify_fn;
  std::function<void(Op&, const MPI_Status&)> status_fn;

  void start() { start_fn(*this); }
  void verify() { verify_fn(*this); }
  void verify_status(const MPI_Status& s) {
    if (status_fn) status_fn(*this, s);
  }
};
using Ops = std::vector<std::unique_ptr<Op>>;

std::unique_ptr<Op> make(std::string name, std::function<void(Op&)> start, std::function<void(Op&)> verify) {
  auto op = std::make_unique<Op>();
  op->name = std::move(name);
  op->start_fn = std::move(start);
  op->verify_fn = std::move(verify);
  return op;
}

// --- The operations -----------------------------------------------------------

// MPI_Iallreduce (sum or max) of n elements of T, in place or not.
template <typename T>
std::unique_ptr<Op> iallreduce(MPI_Datatype type, MPI_Op mpi_op, bool max, int n, int tag, bool in_place,
                               MPI_Comm comm = MPI_COMM_WORLD) {
  auto in = std::make_shared<std::vector<T>>(n), out = std::make_shared<std::vector<T>>(n, T(-99));
  return make(
      "Iallreduce tag " + std::to_string(tag),
      [=](Op& op) {
        for (int i = 0; i < n; ++i) (in_place ? *out : *in)[i] = T(value(rank, i, tag));
        MPI_Iallreduce(in_place ? MPI_IN_PLACE : in->data(), out->data(), n, type, mpi_op, comm, &op.request);
      },
      [=](Op& op) {
        int members = 0;
        MPI_Comm_size(comm, &members);  // (comm's ranks are world ranks 0..members-1 here)
        int bad = 0;
        for (int i = 0; i < n; ++i) {
          T want = max ? T(value(0, i, tag)) : T(0);
          for (int r = 0; r < members; ++r) want = max ? std::max(want, T(value(r, i, tag))) : want + T(value(r, i, tag));
          bad += (*out)[i] != want;
        }
        check(bad == 0, "%s: %d of %d elements wrong", op.name.c_str(), bad, n);
      });
}

// MPI_Iallreduce with MPI_LAND on ints (strata does not serve it: MPI runs it).
std::unique_ptr<Op> iallreduce_land(int n, int tag) {
  auto in = std::make_shared<std::vector<int>>(n), out = std::make_shared<std::vector<int>>(n, -1);
  return make(
      "Iallreduce MPI_LAND",
      [=](Op& op) {
        for (int i = 0; i < n; ++i) (*in)[i] = (i + tag) % 3 != 0 || rank != size - 1;
        MPI_Iallreduce(in->data(), out->data(), n, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &op.request);
      },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) bad += (*out)[i] != ((i + tag) % 3 != 0);
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Iallreduce of MPI_SHORT (not served either).
std::unique_ptr<Op> iallreduce_short(int n, int tag) {
  auto in = std::make_shared<std::vector<short>>(n), out = std::make_shared<std::vector<short>>(n, -1);
  return make(
      "Iallreduce MPI_SHORT",
      [=](Op& op) {
        for (int i = 0; i < n; ++i) (*in)[i] = static_cast<short>(value(rank, i, tag));
        MPI_Iallreduce(in->data(), out->data(), n, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD, &op.request);
      },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) {
          int want = 0;
          for (int r = 0; r < size; ++r) want += value(r, i, tag);
          bad += (*out)[i] != want;
        }
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Ireduce of doubles (sum) to `root`; in place at the root when asked.
std::unique_ptr<Op> ireduce(int n, int tag, int root, bool in_place) {
  auto in = std::make_shared<std::vector<double>>(n), out = std::make_shared<std::vector<double>>(n, -99);
  return make(
      "Ireduce tag " + std::to_string(tag),
      [=](Op& op) {
        const bool here = in_place && rank == root;
        for (int i = 0; i < n; ++i) (here ? *out : *in)[i] = value(rank, i, tag);
        MPI_Ireduce(here ? MPI_IN_PLACE : in->data(), out->data(), n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD,
                    &op.request);
      },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) {
          double want = 0;
          for (int r = 0; r < size; ++r) want += value(r, i, tag);
          bad += rank == root ? (*out)[i] != want : (*out)[i] != -99;  // recvbuf untouched elsewhere
        }
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Ibcast of n ints from `root`; on odd ranks (root included when odd)
// through a strided vector type when `strided`, so those ranks pack or
// unpack. The type is freed right after the call (MPI lets a program do so
// while the operation runs). n = 0 moves nothing.
std::unique_ptr<Op> ibcast(int n, int tag, int root, bool strided) {
  auto buffer = std::make_shared<std::vector<int>>(2 * n + 1, -1);
  const bool packs = strided && rank % 2 == 1;
  return make(
      "Ibcast tag " + std::to_string(tag),
      [=](Op& op) {
        std::fill(buffer->begin(), buffer->end(), -1);
        if (rank == root)
          for (int i = 0; i < n; ++i) (*buffer)[packs ? 2 * i : i] = value(root, i, tag);
        if (!packs) {
          MPI_Ibcast(buffer->data(), n, MPI_INT, root, MPI_COMM_WORLD, &op.request);
          return;
        }
        MPI_Datatype every_second;
        MPI_Type_vector(n, 1, 2, MPI_INT, &every_second);
        MPI_Type_commit(&every_second);
        MPI_Ibcast(buffer->data(), 1, every_second, root, MPI_COMM_WORLD, &op.request);
        MPI_Type_free(&every_second);
      },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) bad += (*buffer)[packs ? 2 * i : i] != value(root, i, tag);
        if (packs)
          for (int i = 0; i < n; ++i) bad += (*buffer)[2 * i + 1] != -1;  // the holes
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Ireduce_scatter_block of long longs (sum), n per block, in place or not.
std::unique_ptr<Op> ireduce_scatter_block(int n, int tag, bool in_place) {
  auto in = std::make_shared<std::vector<long long>>(static_cast<std::size_t>(size) * n);
  auto out = std::make_shared<std::vector<long long>>(static_cast<std::size_t>(size) * n, -99);
  return make(
      "Ireduce_scatter_block tag " + std::to_string(tag),
      [=](Op& op) {
        for (int i = 0; i < size * n; ++i) (in_place ? *out : *in)[i] = value(rank, i, tag);
        MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : in->data(), out->data(), n, MPI_LONG_LONG, MPI_SUM,
                                  MPI_COMM_WORLD, &op.request);
      },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) {
          long long want = 0;
          for (int r = 0; r < size; ++r) want += value(r, rank * n + i, tag);
          bad += (*out)[i] != want;
        }
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Iallgather of n ints per rank, in place or not; odd ranks receive
// into a contiguous derived type when `derived` (so they unpack).
std::unique_ptr<Op> iallgather(int n, int tag, bool in_place, bool derived) {
  auto in = std::make_shared<std::vector<int>>(n);
  auto out = std::make_shared<std::vector<int>>(static_cast<std::size_t>(size) * n, -1);
  const bool unpacks = derived && rank % 2 == 1;
  return make(
      "Iallgather tag " + std::to_string(tag),
      [=](Op& op) {
        std::fill(out->begin(), out->end(), -1);
        for (int i = 0; i < n; ++i) (in_place ? (*out)[rank * n + i] : (*in)[i]) = value(rank, i, tag);
        if (!unpacks) {
          MPI_Iallgather(in_place ? MPI_IN_PLACE : in->data(), n, MPI_INT, out->data(), n, MPI_INT, MPI_COMM_WORLD,
                         &op.request);
          return;
        }
        MPI_Datatype block;
        MPI_Type_contiguous(n, MPI_INT, &block);
        MPI_Type_commit(&block);
        MPI_Iallgather(in_place ? MPI_IN_PLACE : in->data(), n, MPI_INT, out->data(), 1, block, MPI_COMM_WORLD,
                       &op.request);
        MPI_Type_free(&block);
      },
      [=](Op& op) {
        int bad = 0;
        for (int r = 0; r < size; ++r)
          for (int i = 0; i < n; ++i) bad += (*out)[r * n + i] != value(r, i, tag);
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
}

// MPI_Irecv from the left neighbour / MPI_Isend to the right one, n ints.
std::unique_ptr<Op> irecv(int n, int tag) {
  auto buffer = std::make_shared<std::vector<int>>(n, -1);
  const int left = (rank + size - 1) % size;
  auto op = make(
      "Irecv tag " + std::to_string(tag),
      [=](Op& op) { MPI_Irecv(buffer->data(), n, MPI_INT, left, tag, MPI_COMM_WORLD, &op.request); },
      [=](Op& op) {
        int bad = 0;
        for (int i = 0; i < n; ++i) bad += (*buffer)[i] != value(left, i, tag);
        check(bad == 0, "%s: %d wrong", op.name.c_str(), bad);
      });
  op->status_fn = [=](Op& op, const MPI_Status& s) {
    int count = -1;
    MPI_Get_count(&s, MPI_INT, &count);
    check(s.MPI_SOURCE == left && s.MPI_TAG == tag && count == n, "%s: status says source %d tag %d count %d",
          op.name.c_str(), s.MPI_SOURCE, s.MPI_TAG, count);
  };
  return op;
}

std::unique_ptr<Op> isend(int n, int tag) {
  auto buffer = std::make_shared<std::vector<int>>(n);
  const int right = (rank + 1) % size;
  return make(
      "Isend tag " + std::to_string(tag),
      [=](Op& op) {
        for (int i = 0; i < n; ++i) (*buffer)[i] = value(rank, i, tag);
        MPI_Isend(buffer->data(), n, MPI_INT, right, tag, MPI_COMM_WORLD, &op.request);
      },
      [](Op&) {});
}

// A request array of `ops`, with MPI_REQUEST_NULL at `nulls` (positions in
// the array, which the ops fill around).
struct Array {
  std::vector<MPI_Request> requests;
  std::vector<Op*> at;  // the op at each position, nullptr for MPI_REQUEST_NULL
  std::vector<int> reported;

  Array(Ops& ops, std::vector<int> nulls) {
    std::size_t next = 0;
    const std::size_t total = ops.size() + nulls.size();
    for (std::size_t i = 0; i < total; ++i) {
      const bool null = std::find(nulls.begin(), nulls.end(), static_cast<int>(i)) != nulls.end();
      at.push_back(null ? nullptr : ops[next++].get());
      requests.push_back(null ? MPI_REQUEST_NULL : at.back()->request);
    }
    reported.assign(total, 0);
  }
  int count() const { return static_cast<int>(requests.size()); }

  // Entry i was reported complete by `call`: exactly once, with its handle
  // now MPI_REQUEST_NULL (non-persistent), its results right.
  void done(int i, const MPI_Status* status, const char* call) {
    if (i < 0 || i >= count() || !at[i]) {
      check(false, "%s reported index %d, which holds no request", call, i);
      return;
    }
    check(++reported[i] == 1, "%s reported %s (index %d) %d times", call, at[i]->name.c_str(), i, reported[i]);
    check(requests[i] == MPI_REQUEST_NULL, "%s: %s's handle is not MPI_REQUEST_NULL after completing", call,
          at[i]->name.c_str());
    at[i]->verify();
    if (status) at[i]->verify_status(*status);
  }

  void all_reported(const char* call) {
    for (int i = 0; i < count(); ++i)
      if (at[i]) check(reported[i] == 1, "%s: %s (index %d) reported %d times", call, at[i]->name.c_str(), i, reported[i]);
  }
};

// The operations each completion test mixes: routed collectives of every
// kind, point-to-point, and calls MPI runs (MPI_LAND, MPI_SHORT, 0 bytes).
Ops mixed_ops(int tag) {
  Ops ops;
  ops.push_back(irecv(100, tag));
  ops.push_back(iallreduce<double>(MPI_DOUBLE, MPI_SUM, false, 1000, tag, false));
  ops.push_back(isend(100, tag));
  ops.push_back(iallreduce<float>(MPI_FLOAT, MPI_MAX, true, 3000, tag + 1, true));
  ops.push_back(iallreduce_land(50, tag));
  ops.push_back(ireduce(500, tag + 2, size - 1, false));
  ops.push_back(ibcast(700, tag + 3, 1 % size, true));
  ops.push_back(ireduce_scatter_block(40, tag + 4, true));
  ops.push_back(iallgather(30, tag + 5, false, true));
  ops.push_back(iallreduce_short(20, tag));
  ops.push_back(ibcast(0, tag + 6, 0, false));  // 0 bytes
  return ops;
}

void start_all(Ops& ops) {
  for (auto& op : ops) op->start();
}

bool late(double since) { return MPI_Wtime() - since > kLoopSeconds; }

// --- The scenarios ------------------------------------------------------------

// Several routed requests outstanding, completed by one MPI_Waitall listing
// them in reverse (not the order started), some large.
void outstanding() {
  Ops ops;
  for (int k = 0; k < 8; ++k) ops.push_back(iallreduce<int>(MPI_INT, MPI_SUM, false, 1 + 9000 * k, 100 + k, k % 2));
  ops.push_back(iallreduce<double>(MPI_DOUBLE, MPI_SUM, false, 300000, 110, false));
  ops.push_back(ireduce(1000, 111, 0, true));
  ops.push_back(ibcast(5000, 112, size - 1, false));
  ops.push_back(ireduce_scatter_block(1000, 113, false));
  ops.push_back(iallgather(2000, 114, true, false));
  ops.push_back(iallgather(100, 115, true, true));
  start_all(ops);
  std::vector<MPI_Request> requests;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) requests.push_back((*it)->request);
  std::vector<MPI_Status> statuses(requests.size());
  const int rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
  check(rc == MPI_SUCCESS, "outstanding: MPI_Waitall returned %d", rc);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    check(requests[i] == MPI_REQUEST_NULL, "outstanding: handle %zu not MPI_REQUEST_NULL", i);
    check(statuses[i].MPI_ERROR == MPI_SUCCESS, "outstanding: status %zu has MPI_ERROR %d", i, statuses[i].MPI_ERROR);
  }
  for (auto& op : ops) op->verify();
}

void waitall(bool ignore_statuses) {
  Ops ops = mixed_ops(ignore_statuses ? 200 : 210);
  start_all(ops);
  Array a(ops, {0, 4});
  std::vector<MPI_Status> statuses(a.requests.size());
  const int rc = MPI_Waitall(a.count(), a.requests.data(), ignore_statuses ? MPI_STATUSES_IGNORE : statuses.data());
  check(rc == MPI_SUCCESS, "MPI_Waitall returned %d", rc);
  for (int i = 0; i < a.count(); ++i) {
    if (!a.at[i]) continue;
    a.done(i, ignore_statuses ? nullptr : &statuses[i], "MPI_Waitall");
    if (!ignore_statuses) check(statuses[i].MPI_ERROR == MPI_SUCCESS, "MPI_Waitall: status %d error %d", i, statuses[i].MPI_ERROR);
  }
}

void waitany() {
  Ops ops = mixed_ops(300);
  start_all(ops);
  Array a(ops, {1, 7});
  for (int turn = 0; turn <= a.count(); ++turn) {
    int index = -5;
    MPI_Status status;
    const int rc = MPI_Waitany(a.count(), a.requests.data(), &index, &status);
    check(rc == MPI_SUCCESS, "MPI_Waitany returned %d", rc);
    if (index == MPI_UNDEFINED) break;
    a.done(index, &status, "MPI_Waitany");
  }
  a.all_reported("MPI_Waitany");
  int index = -5;
  MPI_Waitany(a.count(), a.requests.data(), &index, MPI_STATUS_IGNORE);
  check(index == MPI_UNDEFINED, "MPI_Waitany on finished requests: index %d, not MPI_UNDEFINED", index);
}

void waitsome(bool ignore_statuses) {
  Ops ops = mixed_ops(ignore_statuses ? 400 : 410);
  start_all(ops);
  Array a(ops, {0, 12});
  std::vector<int> indices(a.requests.size(), -5);
  std::vector<MPI_Status> statuses(a.requests.size());
  for (int turn = 0; turn <= a.count(); ++turn) {
    int out = -5;
    const int rc = MPI_Waitsome(a.count(), a.requests.data(), &out, indices.data(),
                                ignore_statuses ? MPI_STATUSES_IGNORE : statuses.data());
    check(rc == MPI_SUCCESS, "MPI_Waitsome returned %d", rc);
    if (out == MPI_UNDEFINED) break;
    check(out > 0, "MPI_Waitsome: outcount %d", out);
    for (int k = 0; k < out; ++k) a.done(indices[k], ignore_statuses ? nullptr : &statuses[k], "MPI_Waitsome");
  }
  a.all_reported("MPI_Waitsome");
}

void testall() {
  Ops ops = mixed_ops(500);
  start_all(ops);
  Array a(ops, {3});
  std::vector<MPI_Status> statuses(a.requests.size());
  int flag = 0, polls = 0;
  for (const double since = MPI_Wtime(); !flag && !late(since); ++polls)
    if (MPI_Testall(a.count(), a.requests.data(), &flag, statuses.data()) != MPI_SUCCESS) check(false, "MPI_Testall failed");
  check(flag, "MPI_Testall: not complete after %d polls in %g s", polls, kLoopSeconds);
  if (!flag) MPI_Waitall(a.count(), a.requests.data(), statuses.data());
  for (int i = 0; i < a.count(); ++i)
    if (a.at[i]) a.done(i, &statuses[i], "MPI_Testall");
}

void testany() {
  Ops ops = mixed_ops(600);
  start_all(ops);
  Array a(ops, {0, 5});
  int polls = 0;
  for (const double since = MPI_Wtime(); !late(since); ++polls) {
    int index = -5, flag = 0;
    MPI_Status status;
    if (MPI_Testany(a.count(), a.requests.data(), &index, &flag, &status) != MPI_SUCCESS) check(false, "MPI_Testany failed");
    if (flag && index == MPI_UNDEFINED) break;  // nothing active any more
    if (flag) a.done(index, &status, "MPI_Testany");
    else if (index != MPI_UNDEFINED) check(false, "MPI_Testany: flag 0 with index %d", index);
  }
  a.all_reported("MPI_Testany");
}

void testsome() {
  Ops ops = mixed_ops(700);
  start_all(ops);
  Array a(ops, {2});
  std::vector<int> indices(a.requests.size(), -5);
  std::vector<MPI_Status> statuses(a.requests.size());
  int polls = 0;
  for (const double since = MPI_Wtime(); !late(since); ++polls) {
    int out = -5;
    if (MPI_Testsome(a.count(), a.requests.data(), &out, indices.data(), statuses.data()) != MPI_SUCCESS)
      check(false, "MPI_Testsome failed");
    if (out == MPI_UNDEFINED) break;
    for (int k = 0; k < out; ++k) a.done(indices[k], &statuses[k], "MPI_Testsome");
  }
  a.all_reported("MPI_Testsome");
}

// MPI_Test and MPI_Wait on one request each, MPI_Request_get_status (which
// completes nothing), and MPI_REQUEST_NULL.
void single() {
  Ops ops;
  ops.push_back(iallreduce<double>(MPI_DOUBLE, MPI_SUM, false, 2000, 800, false));
  ops.push_back(iallgather(10, 801, false, false));
  ops.push_back(ibcast(64, 802, 0, true));
  start_all(ops);
  int flag = 0;
  MPI_Status status;
  for (const double since = MPI_Wtime(); !flag && !late(since);) MPI_Test(&ops[0]->request, &flag, &status);
  check(flag && ops[0]->request == MPI_REQUEST_NULL, "MPI_Test: never complete");
  ops[0]->verify();
  flag = 0;
  for (const double since = MPI_Wtime(); !flag && !late(since);)
    MPI_Request_get_status(ops[1]->request, &flag, &status);
  check(ops[1]->request != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
  if (flag) ops[1]->verify();  // complete, though not yet reported
  check(MPI_Wait(&ops[1]->request, &status) == MPI_SUCCESS && ops[1]->request == MPI_REQUEST_NULL, "MPI_Wait");
  ops[1]->verify();
  check(MPI_Wait(&ops[2]->request, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait, no status");
  ops[2]->verify();
  MPI_Request none = MPI_REQUEST_NULL;
  check(MPI_Wait(&none, &status) == MPI_SUCCESS && status.MPI_SOURCE == MPI_ANY_SOURCE, "MPI_Wait(MPI_REQUEST_NULL)");
  check(MPI_Test(&none, &flag, &status) == MPI_SUCCESS && flag, "MPI_Test(MPI_REQUEST_NULL)");
}

// Requests on two communicators, started in the same order everywhere and
// completed in different orders by even and odd ranks: listed so in one
// MPI_Waitall, then waited for so with separate MPI_Wait calls (which
// hung through strata before every routed request ran after the ones
// started before it, on any communicator).
void two_communicators() {
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  for (const bool separate : {false, true}) {
    Ops ops;
    ops.push_back(iallreduce<double>(MPI_DOUBLE, MPI_SUM, false, 5000, separate ? 902 : 900, false));
    ops.push_back(iallreduce<double>(MPI_DOUBLE, MPI_SUM, false, 5000, separate ? 903 : 901, false, other));
    start_all(ops);
    MPI_Request requests[2] = {ops[0]->request, ops[1]->request};
    if (rank % 2) std::swap(requests[0], requests[1]);
    if (separate) {
      check(MPI_Wait(&requests[0], MPI_STATUS_IGNORE) == MPI_SUCCESS, "two communicators: first MPI_Wait");
      check(MPI_Wait(&requests[1], MPI_STATUS_IGNORE) == MPI_SUCCESS, "two communicators: second MPI_Wait");
    } else {
      check(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "two communicators: MPI_Waitall");
    }
    for (auto& op : ops) op->verify();
  }
  MPI_Comm_free(&other);
}

// Ranks waiting in different orders, which MPI allows: every collective is
// started in the same order everywhere, and MPI keeps them all moving
// whatever a rank waits for first. (Through strata, a rank runs a routed
// collective only inside its own MPI calls; these hung before every call
// that may wait ran the routed requests first, MPICH's coll/nonblocking3
// among them.)
//  - a point-to-point message that odd ranks send only after their routed
//    request completed: even ranks wait (MPI_Wait, MPI_Waitany, MPI_Waitsome)
//    or poll (MPI_Test, MPI_Testany, MPI_Testsome, MPI_Testall) for it first;
//  - a blocking all-reduce on another communicator, served by strata and
//    not (MPI_LAND), between an even rank's start and wait.
void different_orders() {
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  const int partner = rank ^ 1;  // even rank r waits for a message from r + 1
  const char* const waits[] = {"MPI_Wait", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testany",
                               "MPI_Testsome", "MPI_Testall"};
  for (int kind = 0; kind < 7; ++kind) {
    Ops ops;
    ops.push_back(iallreduce<int>(MPI_INT, MPI_SUM, false, 100, 1010 + kind, false));
    start_all(ops);
    int message = -1;
    if (partner >= size) {  // the last of an odd number of ranks: no partner
    } else if (rank % 2 == 0) {
      MPI_Request receive;
      MPI_Irecv(&message, 1, MPI_INT, partner, 77, MPI_COMM_WORLD, &receive);
      int flag = 0, index = -5, out = -5;
      switch (kind) {
        case 0: MPI_Wait(&receive, MPI_STATUS_IGNORE); break;
        case 1: MPI_Waitany(1, &receive, &index, MPI_STATUS_IGNORE); break;
        case 2: MPI_Waitsome(1, &receive, &out, &index, MPI_STATUSES_IGNORE); break;
        default:
          for (const double since = MPI_Wtime(); !flag && !late(since);) {
            if (kind == 3) MPI_Test(&receive, &flag, MPI_STATUS_IGNORE);
            if (kind == 4) MPI_Testany(1, &receive, &index, &flag, MPI_STATUS_IGNORE);
            if (kind == 5) MPI_Testsome(1, &receive, &out, &index, MPI_STATUSES_IGNORE), flag = out > 0;
            if (kind == 6) MPI_Testall(1, &receive, &flag, MPI_STATUSES_IGNORE);
          }
      }
      check(receive == MPI_REQUEST_NULL && message == 1000 + partner, "%s for a message first: got %d", waits[kind],
            message);
      MPI_Wait(&receive, MPI_STATUS_IGNORE);  // (complete already where the check passed)
    }
    check(MPI_Wait(&ops[0]->request, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: the all-reduce", waits[kind]);
    ops[0]->verify();
    if (partner < size && rank % 2 == 1) {
      message = 1000 + rank;
      MPI_Send(&message, 1, MPI_INT, partner, 77, MPI_COMM_WORLD);
    }
  }
  for (const MPI_Op blocking_op : {MPI_SUM, MPI_LAND}) {  // routed, then MPI's own
    Ops ops;
    ops.push_back(iallreduce<int>(MPI_INT, MPI_SUM, false, 100, 1020, false));
    start_all(ops);
    int one = 1, all = 0;
    if (rank % 2 == 0) MPI_Allreduce(&one, &all, 1, MPI_INT, blocking_op, other);
    check(MPI_Wait(&ops[0]->request, MPI_STATUS_IGNORE) == MPI_SUCCESS, "blocking call between: MPI_Wait");
    if (rank % 2 == 1) MPI_Allreduce(&one, &all, 1, MPI_INT, blocking_op, other);
    check(all == (blocking_op == MPI_SUM ? size : 1), "blocking call between: %d", all);
    ops[0]->verify();
  }
  MPI_Comm_free(&other);
}

// Persistent all-reduce (routed: doubles, ints in place; MPI: MPI_LAND)
// beside persistent point-to-point, started 12 times with MPI_Start and
// MPI_Startall, completed in turn with each completion call, then freed.
// MPICH (4.0 and 5.0.2) and Intel MPI (2021.18) fail MPI_Testall on an
// array holding a persistent collective request when it completes
// (MPI_ERR_IN_STATUS, every status MPI_SUCCESS; MPI_Test, MPI_Testsome and
// the wait calls complete it), with or without the interposer: there,
// persistent() polls with MPI_Testsome instead.
bool testall_fails_on_persistent_collectives() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string library(version, static_cast<std::size_t>(length));
  return library.find("MPICH") != std::string::npos || library.find("Intel(R) MPI") != std::string::npos;
}

void persistent() {
  const program_checks::AllReduceInit init = program_checks::persistent_all_reduce().call;
  if (init == nullptr) return;
  const int n = 500, m = 64, p = 10, l = 16;
  std::vector<double> in(n), out(n, -99);
  std::vector<int> mine(m), sent(p), received(p, -1), land_in(l), land_out(l);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  std::vector<MPI_Request> all(5, MPI_REQUEST_NULL);
  MPI_Recv_init(received.data(), p, MPI_INT, left, 1000, MPI_COMM_WORLD, &all[0]);
  init(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &all[1]);
  MPI_Send_init(sent.data(), p, MPI_INT, right, 1000, MPI_COMM_WORLD, &all[2]);
  init(MPI_IN_PLACE, mine.data(), m, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &all[3]);
  init(land_in.data(), land_out.data(), l, MPI_INT, MPI_LAND, MPI_COMM_WORLD, MPI_INFO_NULL, &all[4]);
  const std::vector<MPI_Request> handles = all;
  // Inactive persistent requests: done at once, empty status.
  MPI_Status status;
  status.MPI_SOURCE = 12345;
  check(MPI_Wait(&all[1], &status) == MPI_SUCCESS && status.MPI_SOURCE == MPI_ANY_SOURCE && all[1] == handles[1],
        "MPI_Wait on an inactive persistent request");
  int flag = 0;
  check(MPI_Test(&all[3], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag, "MPI_Test on an inactive one");

  for (int turn = 0; turn < 12; ++turn) {
    const int tag = 1100 + turn;
    for (int i = 0; i < n; ++i) in[i] = value(rank, i, tag);
    for (int i = 0; i < m; ++i) mine[i] = value(rank, i, tag + 1);
    for (int i = 0; i < p; ++i) sent[i] = value(rank, i, tag + 2);
    for (int i = 0; i < l; ++i) land_in[i] = (i + turn) % 2 || rank != 0;
    std::fill(out.begin(), out.end(), -99);
    std::fill(received.begin(), received.end(), -1);
    if (turn % 3 == 0) {
      MPI_Startall(5, all.data());
    } else if (turn % 3 == 1) {
      for (MPI_Request& r : all) MPI_Start(&r);
    } else {  // collectives in the same order on every rank, point-to-point around them
      MPI_Request first[2] = {all[2], all[1]}, then[3] = {all[3], all[0], all[4]};
      MPI_Startall(2, first);
      MPI_Startall(3, then);
    }
    const char* how = "";
    if (turn % 4 == 0) {
      how = "MPI_Waitall";
      MPI_Waitall(5, all.data(), MPI_STATUSES_IGNORE);
    } else if (turn % 4 == 1 && !testall_fails_on_persistent_collectives()) {
      how = "MPI_Testall";
      flag = 0;
      for (const double since = MPI_Wtime(); !flag && !late(since);) MPI_Testall(5, all.data(), &flag, MPI_STATUSES_IGNORE);
    } else if (turn % 4 == 1) {
      how = "MPI_Testsome";
      int indices[5], out_count = 0;
      for (const double since = MPI_Wtime(); out_count != MPI_UNDEFINED && !late(since);)
        MPI_Testsome(5, all.data(), &out_count, indices, MPI_STATUSES_IGNORE);
    } else if (turn % 4 == 2) {
      how = "MPI_Waitany";
      for (int k = 0; k <= 5; ++k) {
        int index = -5;
        MPI_Waitany(5, all.data(), &index, MPI_STATUS_IGNORE);
        if (index == MPI_UNDEFINED) break;  // every request inactive again
      }
    } else {
      how = "MPI_Waitsome";
      int indices[5], out_count = 0;
      for (int k = 0; k <= 5 && out_count != MPI_UNDEFINED; ++k)
        MPI_Waitsome(5, all.data(), &out_count, indices, MPI_STATUSES_IGNORE);
    }
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += value(r, i, tag);
      bad += out[i] != want;
    }
    for (int i = 0; i < m; ++i) {
      int want = value(0, i, tag + 1);
      for (int r = 1; r < size; ++r) want = std::max(want, value(r, i, tag + 1));
      bad += mine[i] != want;
    }
    for (int i = 0; i < p; ++i) bad += received[i] != value(left, i, tag + 2);
    for (int i = 0; i < l; ++i) bad += land_out[i] != ((i + turn) % 2 != 0);
    check(bad == 0, "persistent, turn %d (%s): %d wrong", turn, how, bad);
    check(all == handles, "persistent, turn %d (%s): a handle changed", turn, how);
  }
  for (MPI_Request& r : all) MPI_Request_free(&r);
  check(all == std::vector<MPI_Request>(5, MPI_REQUEST_NULL), "MPI_Request_free left a handle");
}

// MPI_Request_free on an active routed request (erroneous for a collective's
// request in MPI; Open MPI refuses it with MPI_ERR_REQUEST): with the
// interposer it has completed when the call returns (strata cannot cancel).
void freed_while_active() {
  const int n = 1000, tag = 1200;
  std::vector<double> in(n), out(n, -99);
  for (int i = 0; i < n; ++i) in[i] = value(rank, i, tag);
  MPI_Request request;
  MPI_Iallreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
  check(MPI_Request_free(&request) == MPI_SUCCESS && request == MPI_REQUEST_NULL, "MPI_Request_free");
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r) want += value(r, i, tag);
    bad += out[i] != want;
  }
  check(bad == 0, "freed while active: %d wrong", bad);
}

// What only the interposer promises about erroneous programs: ranks whose
// counts differ get MPI_ERR_TRUNCATE from the completion call (strata's
// call check), and the communicator keeps working; MPI_Start on an active
// request is MPI_ERR_REQUEST.
void errors() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::vector<double> in(20, 1.0), out(20);
  MPI_Request requests[3];
  MPI_Iallreduce(in.data(), out.data(), 10 + rank, MPI_DOUBLE, MPI_SUM, comm, &requests[0]);
  int token = rank, got = -1;
  MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 1300, MPI_COMM_WORLD, &requests[1]);
  MPI_Isend(&token, 1, MPI_INT, (rank + 1) % size, 1300, MPI_COMM_WORLD, &requests[2]);
  MPI_Status statuses[3];
  int rc = MPI_Waitall(3, requests, statuses);
  int cls = -1;
  MPI_Error_class(statuses[0].MPI_ERROR, &cls);
  check(rc == MPI_ERR_IN_STATUS && cls == MPI_ERR_TRUNCATE && statuses[1].MPI_ERROR == MPI_SUCCESS &&
            statuses[2].MPI_ERROR == MPI_SUCCESS && got == (rank + size - 1) % size,
        "counts differing: MPI_Waitall returned %d, statuses %d %d %d", rc, statuses[0].MPI_ERROR,
        statuses[1].MPI_ERROR, statuses[2].MPI_ERROR);
  MPI_Iallreduce(in.data(), out.data(), 10 + rank, MPI_DOUBLE, MPI_SUM, comm, &requests[0]);
  rc = MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  MPI_Error_class(rc, &cls);
  check(cls == MPI_ERR_TRUNCATE && requests[0] == MPI_REQUEST_NULL, "counts differing: MPI_Wait returned %d", rc);
  MPI_Iallreduce(in.data(), out.data(), 20, MPI_DOUBLE, MPI_SUM, comm, &requests[0]);
  rc = MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  check(rc == MPI_SUCCESS && out[19] == size, "after the mismatch: MPI_Wait returned %d, result %g", rc, out[19]);
  if (const program_checks::AllReduceInit init = program_checks::persistent_all_reduce().call) {
    init(in.data(), out.data(), 20, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &requests[0]);
    MPI_Start(&requests[0]);
    rc = MPI_Start(&requests[0]);
    check(rc == MPI_ERR_REQUEST, "MPI_Start on an active request returned %d", rc);
    check(MPI_Wait(&requests[0], MPI_STATUS_IGNORE) == MPI_SUCCESS && out[0] == size, "after the refused MPI_Start");
    MPI_Request_free(&requests[0]);
  }
  MPI_Comm_free(&comm);
}

// With strata's progress thread a request completes while its ranks make
// no MPI call: rank 1 sleeps 2 s right after starting it, while rank 0
// tests it every 10 ms. Had the progress thread not taken it, rank 0's
// first MPI_Test would run it on rank 0's thread and wait there until rank
// 1 woke up (MPI_Test returns only when done, docs/INTERPOSER.md).
void progress_without_calls() {
  const int n = 32768, tag = 1400;  // 128 KiB: strata's thread takes requests from 64 KiB
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = value(rank, i, tag);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Request request;
  MPI_Iallreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
  const double since = MPI_Wtime();
  if (rank == 1) usleep(2000000);
  int flag = 0;
  while (!flag && MPI_Wtime() - since < 60) {
    if (rank != 1) usleep(10000);
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
  }
  const double took = MPI_Wtime() - since;
  if (rank != 1)
    check(flag && took < 1.5, "progress thread: the request took %.2f s, done only once rank 1 woke after 2 s", took);
  if (!flag) MPI_Wait(&request, MPI_STATUS_IGNORE);
  float want = 0;
  for (int r = 0; r < size; ++r) want += value(r, n - 1, tag);
  check(out[n - 1] == want, "progress thread: wrong result");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  program_checks::start("requests", 120);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; ++i) {
    with_strata |= std::strcmp(argv[i], "--strata") == 0;
    progress_thread |= std::strcmp(argv[i], "--progress-thread") == 0;
  }
  outstanding();
  waitall(false);
  waitall(true);
  waitany();
  waitsome(false);
  waitsome(true);
  testall();
  testany();
  testsome();
  single();
  two_communicators();
  different_orders();
  persistent();
  if (with_strata) {
    freed_while_active();
    errors();
  }
  if (progress_thread) progress_without_calls();
  if (rank == 0) std::printf("requests: persistent all-reduce: %s\n", program_checks::persistent_all_reduce().name);
  const int status = program_checks::passed();
  MPI_Finalize();
  return status;
}
