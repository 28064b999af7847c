// strata::Communicator: the collectives on one MPI communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "strata/errors.hpp"
#include "strata/options.hpp"
#include "strata/plan.hpp"
#include "strata/request.hpp"
#include "strata/spec.hpp"
#include "strata/topology.hpp"
#include "strata/types.hpp"

namespace strata {

class Communicator;
namespace api {
class Session;
struct Prepared;
Session& session_of(Communicator& comm);
}  // namespace api

// Threads and MPI thread levels. A Communicator is not thread-safe: one
// thread at a time may call it, Request objects included (no internal
// lock; two threads in one Communicator at once is undefined). Different
// Communicators may be used by different threads at once. strata's own
// threads call MPI only where MPI was initialised with MPI_THREAD_MULTIPLE
// (the progress thread, Config::progress_thread; the GPU backend's watcher
// when it asks the ranks who stopped); below that level they leave MPI to
// the calling thread, inside its calls (NCCL's own threads never call
// MPI). So the MPI thread level your program needs is the one its calling
// pattern needs anyway:
//   - calls from the thread that initialised MPI: MPI_THREAD_FUNNELED
//     (MPI_THREAD_SINGLE works in practice, as for any MPI library call);
//   - calls from several threads, one at a time: MPI_THREAD_SERIALIZED;
//   - different Communicators used by different threads concurrently:
//     MPI_THREAD_MULTIPLE.
// Construction and destruction are collective MPI calls as well.
class Communicator {
 public:
  // Collective over `comm`: every rank of `comm` must construct it. The
  // communicator is duplicated, so strata's traffic never mixes with the
  // caller's. Construction also groups ranks into nodes, reads each node's
  // topology (hwloc) and maps the node's shared-memory segment, so that no
  // later call blocks outside its deadline. Throws InvalidArgument for a bad
  // Config (unknown algorithm in the spec), ranks differing in whether calls
  // are checked (Config::check_calls, STRATA_CHECK), verified
  // (Config::verify, STRATA_VERIFY; a value of STRATA_VERIFY other than
  // checksum or off) or STRATA_RANKS_PER_NODE, Unavailable if hwloc fails,
  // BackendError if MPI or shared memory fails. With Config::verify, every
  // host call below may also throw Corrupted (strata/errors.hpp), on every
  // rank alike; the communicator stays usable.
  explicit Communicator(MPI_Comm comm, Config config = {});
  // Collective. Completes every started request first (their errors stay
  // with their Request objects).
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int rank() const;
  int size() const;

  // The nodes, their hardware and every rank's binding, discovered once at
  // construction (collectively) and identical on every rank.
  const Topology& topology() const;

  // Every rank's `out` receives op(in of all ranks). In place when
  // in.data == out.data; count 0 is legal. All ranks pass the same count,
  // dtype and op. Guarantees: identical bits on every rank, the same bits run
  // to run, f16/bf16 reduced in f32, mean keeps the dtype.
  // Throws InvalidArgument (before sending anything), Mismatch (ranks
  // disagree on the call: raised on every rank, nothing sent, the
  // communicator stays usable), DeadlineExceeded, PeerFailure (communicator
  // already broken), BackendError. A call is collective even when its
  // arguments are invalid: with the call check on (Config::check_calls),
  // a rank whose arguments fail validation raises InvalidArgument after
  // telling the others, which raise Mismatch naming it; when every rank
  // passes the same invalid arguments, every rank raises InvalidArgument.
  // When a call throws, nothing is written into `out` afterwards.
  void all_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});

  // Like all_reduce, but only `root` receives the result; `out` is ignored
  // (may be null) on other ranks. Throws as all_reduce; InvalidArgument for
  // a root outside [0, size).
  void reduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options = {});

  // Copies `root`'s buffer into every other rank's buffer.
  void broadcast(Tensor buffer, int root, const CommunicationOptions& options = {});

  // Rank r's `out` receives op over every rank's block r of `in`, where
  // in.count = size() x out.count and block r is in's elements
  // [r x out.count, (r + 1) x out.count) (MPI_Reduce_scatter_block,
  // ncclReduceScatter). In place when out.data is this rank's block of
  // in.data; no other part of `in` is written. mean divides by the
  // contributors, ranks x replicas (here size()).
  // Guarantees: every element is reduced in a fixed order (the same bits
  // run to run with the same spec and ranks), f16/bf16 reduced in f32, mean
  // keeps the dtype. Throws as all_reduce, and InvalidArgument when
  // in.count is not size() x out.count or the buffers overlap otherwise.
  // The spec picks its algorithm by in's bytes (docs/ALGORITHMS.md).
  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});

  // Every rank's `out` receives every rank's `in`, rank r's at block r:
  // out.count = size() x in.count, block r is out's elements
  // [r x in.count, (r + 1) x in.count) (MPI_Allgather, ncclAllGather). In
  // place when in.data is this rank's block of out.data. Every rank gets
  // the same bits, each block exactly as its rank passed it. Throws as
  // all_reduce (there is no op), and InvalidArgument when out.count is not
  // size() x in.count or the buffers overlap otherwise. The spec picks its
  // algorithm by out's bytes.
  void all_gather(Tensor in, Tensor out, const CommunicationOptions& options = {});

  // All-reduces each tensor in place, packing them per `packing` and
  // options.bytes_per_pack (0 = automatic; see PackingOptions). Tensors must
  // not overlap. Results land in the caller's tensors whatever the packing;
  // `on_pack_done(i)` fires once per pack, in order, as soon as pack i's
  // results are in the caller's tensors. The timeout bounds the whole batch.
  // Packing moves elements between calls, so floating-point results may
  // differ in the last bits from per-tensor all_reduce (still identical on
  // every rank and deterministic). Stream-ordered (CUDA tensors, a stream in
  // the options): on_pack_done(i) fires once pack i is enqueued, and work
  // the caller then enqueues on that stream sees it.
  void batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const CommunicationOptions& options = {},
                        std::function<void(std::size_t pack)> on_pack_done = {});
  void batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing,
                        const CommunicationOptions& options = {},
                        std::function<void(std::size_t pack)> on_pack_done = {});

  // --- Non-blocking forms (strata/request.hpp) ------------------------------
  // Each starts the call and returns its Request. Arguments and guarantees
  // as for the blocking form; the tensors (and a batch's callback) must stay
  // valid, inputs unchanged and outputs untouched, until the request
  // completes. Errors, invalid arguments included, come from the request's
  // test() or wait(), in order. Requests complete in the order started; a
  // blocking call completes every request started before it. A batch's
  // on_pack_done runs on the thread that runs the request.
  Request iall_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});
  Request ireduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options = {});
  Request ibroadcast(Tensor buffer, int root, const CommunicationOptions& options = {});
  Request ireduce_scatter(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});
  Request iall_gather(Tensor in, Tensor out, const CommunicationOptions& options = {});
  Request ibatch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing = {},
                            const CommunicationOptions& options = {},
                            std::function<void(std::size_t pack)> on_pack_done = {});

  // --- Persistent forms -----------------------------------------------------
  // Bind the call once (arguments checked, options copied) and return an
  // inactive Request; each Request::start() runs it again on the same
  // buffers, as the non-blocking form would. Local: nothing is sent until
  // start(). Invalid arguments surface from each run's test()/wait() (the
  // other ranks get Mismatch, as for a blocking call).
  Request all_reduce_init(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});
  Request reduce_init(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options = {});
  Request broadcast_init(Tensor buffer, int root, const CommunicationOptions& options = {});
  Request reduce_scatter_init(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options = {});
  Request all_gather_init(Tensor in, Tensor out, const CommunicationOptions& options = {});

  // The algorithm (with "#shards" when > 1, "a/b" when hierarchical) this
  // communicator's spec runs for one call of `bytes` bytes on `memory`.
  // Local (no communication). Throws nothing for valid enums.
  std::string algorithm_for(std::size_t bytes, Collective collective = Collective::all_reduce,
                            Memory memory = Memory::host) const;

  // The spec this communicator runs (Config, else STRATA_SPEC or
  // STRATA_SPEC_FILE, else "auto"), and its size -> algorithm map for
  // all-reduce on host memory, one line, as STRATA_DEBUG=INFO prints it:
  // "auto = [0 .. 65536 B: pscpu/rechd] [65537 B and up: ...]". Local.
  AllReduceSpec all_reduce_spec() const;
  std::string spec_map() const;

  // What batch_all_reduce(tensors, ..., packing, options) would run: its
  // packs, which tensors each carries and the algorithm per pack. Only the
  // tensors' count, dtype and memory matter. Local (no communication).
  // Throws InvalidArgument as batch_all_reduce validates.
  Plan plan_for(std::span<const Tensor> tensors, const PackingOptions& packing = {},
                const CommunicationOptions& options = {}) const;

  // True once a timeout or a peer failure broke the communicator.
  bool broken() const;

  // Raises, once, the error of a failure that happened after a
  // stream-ordered call (CUDA tensors with CommunicationOptions::stream)
  // returned: DeadlineExceeded naming the ranks that did not arrive, or
  // BackendError for an asynchronous NCCL or CUDA error. Such a failure
  // breaks the communicator: afterwards check() and every call raise
  // PeerFailure. Returns normally while the communicator is usable. Local:
  // it looks at the communicator's outstanding GPU work once and never waits
  // for the GPU.
  void check();

  // Writes this process's flight record — its last calls on every
  // communicator (STRATA_FLIGHT_RECORDS of them, 256 unless set) — to
  // STRATA_FLIGHT_DIR/flight-<host>-<pid>-rank<world rank>.txt, replacing
  // that file, and returns its path. strata writes the same file by itself
  // on a DeadlineExceeded, a Mismatch, a PeerFailure, a fatal signal and
  // SIGUSR1 (docs/RELIABILITY.md, "Flight recorder"). Local (no
  // communication); works on a broken communicator too. Throws
  // InvalidArgument when STRATA_FLIGHT_DIR was not set when the first
  // Communicator was made, or when the file cannot be written (saying why).
  std::string dump_flight_record();

 private:
  friend api::Session& api::session_of(Communicator& comm);
  void run(const api::Prepared& prepared);
  Request start(const api::Prepared& prepared, bool persistent);
  std::unique_ptr<api::Session> session_;
};

}  // namespace strata
