/* strata's C API: the collectives of strata::Communicator for C programs
 * (and, through include/strata/strata.f90, for Fortran programs).
 *
 * C99, no C++: compiles with `gcc -std=c99 -pedantic -Wall -Werror`. Every
 * function returns a strata_status (or a plain value that cannot fail); no
 * C++ exception ever crosses this boundary. On failure the message of the
 * C++ exception, naming where and why, is kept per thread and read with
 * strata_last_error(). See docs/C_API.md for error codes, ownership rules and
 * the Fortran module.
 *
 * Ownership: strata never keeps a pointer passed to a call after the call
 * returns (buffers, options, config, spec strings), except the buffers of a
 * request (a non-blocking or persistent call), which are strata's until the
 * request completes (persistent: until it is freed), and the buffers of a
 * stream-ordered call (strata_options' stream), which the GPU uses until
 * the stream passes the call, as for any work enqueued on it. The objects
 * strata allocates for the caller are the strata_comm, released by
 * strata_comm_free, and the strata_request, released by strata_request_free.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes --------------------------------------------------------
 * One code per strata::Error subclass of the C++ API. Values are stable. */
typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /* bad input, detected before anything was sent */
  STRATA_ERR_DEADLINE_EXCEEDED = 2, /* timeout_seconds expired; the communicator is now broken */
  STRATA_ERR_MISMATCH = 3,          /* ranks disagreed about a call */
  STRATA_ERR_PEER_FAILURE = 4,      /* a peer failed, or an earlier failure broke the communicator */
  STRATA_ERR_UNAVAILABLE = 5,       /* not available here (no GPU, built without CUDA, ...) */
  STRATA_ERR_BACKEND = 6,           /* MPI, CUDA or NCCL returned an error */
  STRATA_ERR_INTERNAL = 7,          /* anything else: out of memory, a bug in strata */
  STRATA_ERR_CORRUPTED = 8,         /* the result failed the integrity check (strata_config.verify) */
  STRATA_STATUS_MAX_ENUM = 0x7fffffff
} strata_status;

/* Every enum below ends in a _MAX_ENUM value: it makes the enum as wide as
 * an int, so an out-of-range value a program passes (e.g. read from a file)
 * is a value strata can check and refuse with STRATA_ERR_INVALID_ARGUMENT,
 * not undefined behaviour in the C++ behind this header. Never pass it. */

/* ---- vocabulary (same order and values as the C++ enums) ------------------ */
typedef enum strata_dtype {
  STRATA_F32 = 0,
  STRATA_F64 = 1,
  STRATA_F16 = 2,  /* IEEE half, reduced in f32 */
  STRATA_BF16 = 3, /* bfloat16, reduced in f32 */
  STRATA_I8 = 4,
  STRATA_U8 = 5,
  STRATA_I32 = 6,
  STRATA_U32 = 7,
  STRATA_I64 = 8,
  STRATA_U64 = 9,
  STRATA_DTYPE_MAX_ENUM = 0x7fffffff
} strata_dtype;

/* mean = sum / number of ranks, in the buffer's own dtype (integers truncate
 * toward zero). */
typedef enum strata_op {
  STRATA_SUM = 0,
  STRATA_MEAN = 1,
  STRATA_MIN = 2,
  STRATA_MAX = 3,
  STRATA_PROD = 4,
  STRATA_OP_MAX_ENUM = 0x7fffffff
} strata_op;

/* automatic follows the communicator's all_reduce_spec; ring forces xring;
 * nccl forces NCCL (CUDA memory only). */
typedef enum strata_implementation {
  STRATA_IMPL_AUTO = 0,
  STRATA_IMPL_RING = 1,
  STRATA_IMPL_NCCL = 2,
  STRATA_IMPL_MAX_ENUM = 0x7fffffff
} strata_implementation;

/* Where a call's buffers live. */
typedef enum strata_memory {
  STRATA_MEMORY_HOST = 0,
  STRATA_MEMORY_CUDA = 1,
  STRATA_MEMORY_MAX_ENUM = 0x7fffffff
} strata_memory;

/* ---- option structs ------------------------------------------------------
 * Plain values, read during the call only. Start from the INIT macro or the
 * _init function so that fields added later get their defaults. */

/* Per-communicator configuration (strata::Config), fixed at creation. */
typedef struct strata_config {
  /* The all_reduce_spec ("auto", "xring", "tree:4k:xring#2", ...; see
   * docs/ALGORITHMS.md). NULL or "" = the STRATA_SPEC environment variable
   * if set, else "auto". */
  const char* all_reduce_spec;
  /* Pipeline chunk of the ring algorithms in bytes; 0 = built-in default,
   * else 4096 .. 1 GiB. */
  size_t chunk_bytes;
  /* Non-zero (the default): before any data moves, every rank checks that
   * all make the same call; on a difference every rank fails with
   * STRATA_ERR_MISMATCH (strata::Config::check_calls; STRATA_CHECK=off in the
   * environment turns it off too). */
  int check_calls;
  /* Non-zero: run started requests (strata_iall_reduce, ...,
   * strata_request_start) on a progress thread of the communicator while
   * the caller computes, where that thread may run them: host memory whose
   * plan makes no MPI call (one node, over shared memory), every host
   * request when MPI was initialised with MPI_THREAD_MULTIPLE; the others
   * run inside strata_request_test/wait as without it. 0 (the default):
   * none (STRATA_PROGRESS_THREAD=1 in the environment turns it on too).
   * strata::Config::progress_thread. */
  int progress_thread;
  /* Reproducible results (strata::Config::reproducible; docs/REPRODUCIBILITY.md):
   * "off", "order" (for a given rank count, the same bits whatever the
   * algorithm, layout, size or form) or "exact" (the same bits for any
   * assignment of the contributions to ranks). NULL or "" = the
   * STRATA_REPRODUCIBLE environment variable if set, else "off". */
  const char* reproducible;
  /* Non-zero: f16 and bf16 sums and means accumulate in f32 and round once
   * (strata::Config::accumulate_f32; STRATA_ACCUMULATE=f32 too). */
  int accumulate_f32;
  /* STRATA_VERIFY_CHECKSUM: after each host-memory call the ranks compare
   * checksums of what each gave and holds, and every rank fails with
   * STRATA_ERR_CORRUPTED naming the call when the result is not the
   * reduction (or copy) of the contributions; the communicator stays
   * usable. STRATA_VERIFY_OFF (the default): no check. STRATA_VERIFY=checksum
   * or off in the environment overrides it. strata::Config::verify;
   * docs/RELIABILITY.md, "Integrity checks". */
  int verify;
} strata_config;
#define STRATA_VERIFY_OFF 0
#define STRATA_VERIFY_CHECKSUM 1
#define STRATA_CONFIG_INIT {NULL, 0, 1, 0, NULL, 0, STRATA_VERIFY_OFF}

/* Per-call options (strata::CommunicationOptions), plus where the call's
 * buffers live (strata::Tensor's memory and device: in C they describe every
 * buffer of the call). */
typedef struct strata_options {
  long long bytes_per_pack;              /* batch pack size; 0 = automatic; < 0 invalid */
  double timeout_seconds;                /* bound on the whole call; 0 = none; < 0 or NaN invalid */
  strata_implementation implementation;  /* default STRATA_IMPL_AUTO */
  strata_memory memory;                  /* default STRATA_MEMORY_HOST */
  int device;                            /* CUDA device of CUDA buffers; -1 = this rank's device */
  /* CUDA buffers: a cudaStream_t, passed opaquely (strata.h includes no CUDA
   * header; cast it: (void*)stream). NULL (the default): a blocking call
   * with MPI's semantics; it orders after the legacy default stream of the
   * buffers' device and returns once the result is in `out`. Non-NULL: a
   * stream-ordered call, as NCCL's: strata's work for the call runs after
   * everything already enqueued on `stream`, later work on `stream` sees
   * the result, and the call returns as soon as the work is enqueued. Its
   * errors after that return are asynchronous: they break the communicator
   * and come back from strata_comm_check, the next call or a request's
   * test/wait. For the legacy default stream pass cudaStreamLegacy ((void*)1;
   * NULL means no stream), for the per-thread one cudaStreamPerThread
   * ((void*)2). Ignored for host memory. docs/C_API.md, "Streams". */
  void* stream;
} strata_options;
#define STRATA_OPTIONS_INIT {0, 0.0, STRATA_IMPL_AUTO, STRATA_MEMORY_HOST, -1, NULL}

/* How strata_batch_all_reduce packs buffers (strata::PackingOptions).
 * num_packs > 0 wins; else small-buffer aggregation when both agg_* > 0;
 * else options->bytes_per_pack. Negative values are invalid. */
typedef struct strata_packing {
  int num_packs;
  long long agg_small_grads_max_bytes;
  int agg_small_grads_max_group; /* default 10 */
} strata_packing;
#define STRATA_PACKING_INIT {0, 0, 10}

/* Set *config / *options / *packing to the defaults above (for callers that
 * cannot use the INIT macros, such as Fortran). A NULL pointer is ignored. */
void strata_config_init(strata_config* config);
void strata_options_init(strata_options* options);
void strata_packing_init(strata_packing* packing);

/* ---- communicators -------------------------------------------------------- */

/* Opaque handle to a strata::Communicator. */
typedef struct strata_comm strata_comm;

/* Collective over `comm`: every rank of `comm` must call it, with the same
 * config. Duplicates `comm` (strata's traffic never mixes with the caller's),
 * groups ranks into nodes, reads the topology and maps the node's shared
 * memory. `config` may be NULL (defaults). On success *out is a new handle
 * owned by the caller (release it with strata_comm_free before
 * MPI_Finalize); on failure *out is NULL. Returns INVALID_ARGUMENT (NULL
 * out, MPI not initialised, MPI_COMM_NULL, an unknown algorithm in the spec,
 * a bad STRATA_RANKS_PER_NODE), UNAVAILABLE (hwloc cannot read the node),
 * BACKEND (MPI or shared memory failed), INTERNAL. */
strata_status strata_comm_create(MPI_Comm comm, const strata_config* config, strata_comm** out);

/* strata_comm_create for a Fortran communicator handle (an `integer` from
 * Fortran's `mpi` module, or `MPI_Comm%MPI_VAL` from `mpi_f08`), converted
 * with MPI_Comm_f2c. Same contract as strata_comm_create. */
strata_status strata_comm_create_f(MPI_Fint comm, const strata_config* config, strata_comm** out);

/* Releases *comm (frees strata's duplicate of the MPI communicator and the
 * shared memory mapping) and sets *comm to NULL. Call it on every rank, after
 * the last call on the handle and before MPI_Finalize. NULL or *comm == NULL
 * is a no-op. Never fails: returns STRATA_OK. */
strata_status strata_comm_free(strata_comm** comm);

/* This rank's rank / the number of ranks in the communicator, into *rank /
 * *size. INVALID_ARGUMENT if comm or the out pointer is NULL. */
strata_status strata_comm_rank(const strata_comm* comm, int* rank);
strata_status strata_comm_size(const strata_comm* comm, int* size);

/* *broken = 1 once a timeout or a peer failure broke the communicator (every
 * later collective on it returns STRATA_ERR_PEER_FAILURE), else 0.
 * INVALID_ARGUMENT if comm or broken is NULL. */
strata_status strata_comm_broken(const strata_comm* comm, int* broken);

/* The status of Communicator::check(): STRATA_OK while the communicator is
 * usable; else, once, the error of a failure that happened after a
 * stream-ordered call (options->stream set) had returned --
 * STRATA_ERR_DEADLINE_EXCEEDED naming the ranks that did not arrive, or
 * STRATA_ERR_BACKEND for an asynchronous NCCL or CUDA error -- with its
 * message in strata_last_error(); afterwards, and for a communicator a
 * blocking call's timeout or a peer failure broke, STRATA_ERR_PEER_FAILURE.
 * Local: it looks at the communicator's outstanding GPU work once and never
 * waits for the GPU or the other ranks. INVALID_ARGUMENT if comm is NULL. */
strata_status strata_comm_check(strata_comm* comm);

/* Communicator::dump_flight_record(): writes this process's flight record
 * (its last calls on every communicator) to
 * STRATA_FLIGHT_DIR/flight-<host>-<pid>-rank<world rank>.txt and, when
 * `path` is not NULL, copies that file's path into it (at most
 * path_size - 1 characters, then a 0). Local. INVALID_ARGUMENT if comm is
 * NULL, if STRATA_FLIGHT_DIR was not set when the first communicator was
 * made, or if the file cannot be written (strata_last_error() says why).
 * docs/RELIABILITY.md, "Flight recorder". */
strata_status strata_comm_dump_flight_record(strata_comm* comm, char* path, size_t path_size);

/* ---- collectives -----------------------------------------------------------
 * All collectives: every rank of the communicator calls them in the same
 * order with the same count, dtype, op and root. `options` may be NULL
 * (defaults: host memory, no timeout, automatic packing and algorithm).
 * Bad arguments return STRATA_ERR_INVALID_ARGUMENT before anything is sent,
 * so when every rank passes the same bad argument every rank gets it and
 * the communicator stays usable. Other failures: DEADLINE_EXCEEDED (the
 * timeout expired; the message names the ranks still awaited),
 * PEER_FAILURE (the communicator was already broken), UNAVAILABLE (CUDA
 * memory without a usable GPU), BACKEND, INTERNAL. A stream-ordered call
 * (options->stream set, CUDA memory) returns once its work is enqueued:
 * what fails after that comes from strata_comm_check or the next call. */

/* Every rank's `out` receives op over all ranks' `in` (count elements of
 * dtype each). In place when in == out; otherwise the buffers must not
 * overlap. count 0 is legal (the pointers may then be NULL). Every rank gets
 * identical bits, and the same bits run to run. */
strata_status strata_all_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                strata_op op, const strata_options* options);

/* Like strata_all_reduce, but only rank `root` receives the result in
 * `out`; on other ranks `out` is ignored (may be NULL) and left unchanged.
 * INVALID_ARGUMENT for a root outside [0, size). */
strata_status strata_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                            strata_op op, int root, const strata_options* options);

/* Copies rank `root`'s `count` elements at `buffer` into every other rank's
 * `buffer`. INVALID_ARGUMENT for a root outside [0, size). */
strata_status strata_broadcast(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                               const strata_options* options);

/* Rank r's `out` receives op over every rank's block r of `in`
 * (MPI_Reduce_scatter_block, ncclReduceScatter): `in` holds size x
 * recv_count elements of dtype, block r being its elements
 * [r x recv_count, (r + 1) x recv_count); `out` holds recv_count. In place
 * when `out` is this rank's block of `in` (in + rank x recv_count
 * elements), and then no other part of `in` is written; otherwise the
 * buffers must not overlap. recv_count 0 is legal (the pointers may then be
 * NULL). op as for strata_all_reduce; each element is reduced in a fixed
 * order (the same bits run to run). INVALID_ARGUMENT when size x recv_count
 * does not fit a size_t. */
strata_status strata_reduce_scatter(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                    strata_dtype dtype, strata_op op, const strata_options* options);

/* Every rank's `out` receives every rank's `in` (MPI_Allgather,
 * ncclAllGather): `in` holds send_count elements of dtype, `out` size x
 * send_count, rank r's `in` landing at out's elements
 * [r x send_count, (r + 1) x send_count). In place when `in` is this rank's
 * block of `out` (out + rank x send_count elements); otherwise the buffers
 * must not overlap. send_count 0 is legal (the pointers may then be NULL).
 * Every rank gets the same bits. INVALID_ARGUMENT when size x send_count
 * does not fit a size_t. */
strata_status strata_all_gather(strata_comm* comm, const void* in, void* out, size_t send_count, strata_dtype dtype,
                                const strata_options* options);

/* All-reduces n buffers in place: buffers[i] holds counts[i] elements of
 * dtypes[i]. Buffers must not overlap; several small buffers travel packed
 * (per `packing`, NULL = automatic, and options->bytes_per_pack). Results
 * land in the caller's buffers whatever the packing; floating-point results
 * may differ in the last bits from one strata_all_reduce per buffer (still
 * identical on every rank and deterministic). The timeout bounds the whole
 * batch. n == 0 is legal (the arrays may then be NULL). */
strata_status strata_batch_all_reduce(strata_comm* comm, void* const* buffers, const size_t* counts,
                                      const strata_dtype* dtypes, size_t n, strata_op op,
                                      const strata_packing* packing, const strata_options* options);

/* ---- requests: non-blocking and persistent collectives ---------------------
 * strata::Request (strata/request.hpp) for C. strata_iall_reduce and the
 * other strata_i* calls start the collective and return at once; the
 * strata_*_init calls bind one (nothing is sent) for strata_request_start
 * to run again and again on the same buffers. Every rank starts the same
 * calls in the same order (blocking calls included), as for blocking calls.
 *
 * Each takes the arguments of its blocking call, plus `req`, where a new
 * handle owned by the caller is written (free it with strata_request_free).
 * The call itself fails only when no request can be made: NULL comm or
 * req, buffers / counts / dtypes NULL with n > 0 (batch), a blockwise count
 * whose size x count overflows a size_t (INVALID_ARGUMENT, on this rank
 * only, as for the blocking call), INTERNAL; then *req is NULL. Every other
 * error, invalid arguments included, comes from strata_request_test or
 * strata_request_wait with the blocking call's status and message: an
 * argument only this rank got wrong is INVALID_ARGUMENT here and MISMATCH
 * on the other ranks (with the call check on), and the communicator stays
 * usable.
 *
 * Buffers: from the start until test reported completion or wait returned,
 * the request's buffers belong to strata (do not write its inputs or read
 * its outputs); afterwards nothing strata started writes into them. The
 * options, packing and the batch's buffers / counts / dtypes arrays are
 * copied: they may be reused at once.
 *
 * Progress: a communicator runs its requests one at a time in the order
 * they were started, inside strata_request_test and strata_request_wait
 * (and before any blocking call on it, which first completes every request
 * started before it), or on its progress thread (strata_config's
 * progress_thread). So test runs the requests started before this one and
 * this one, waiting for the other ranks as wait does (bounded by the
 * call's timeout), unless the progress thread runs them.
 *
 * Requests outlive their communicator: strata_comm_free completes every
 * request started on it first (their errors stay with the requests), and a
 * persistent request cannot be started afterwards (INVALID_ARGUMENT).
 * One thread at a time may use a communicator and its requests. */

/* Opaque handle to a strata::Request. */
typedef struct strata_request strata_request;

/* Non-blocking forms: arguments and results as strata_all_reduce,
 * strata_reduce, strata_broadcast, strata_reduce_scatter,
 * strata_all_gather and strata_batch_all_reduce. */
strata_status strata_iall_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                 strata_op op, const strata_options* options, strata_request** req);
strata_status strata_ireduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                             strata_op op, int root, const strata_options* options, strata_request** req);
strata_status strata_ibroadcast(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                                const strata_options* options, strata_request** req);
strata_status strata_ireduce_scatter(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                     strata_dtype dtype, strata_op op, const strata_options* options,
                                     strata_request** req);
strata_status strata_iall_gather(strata_comm* comm, const void* in, void* out, size_t send_count, strata_dtype dtype,
                                 const strata_options* options, strata_request** req);
strata_status strata_ibatch_all_reduce(strata_comm* comm, void* const* buffers, const size_t* counts,
                                       const strata_dtype* dtypes, size_t n, strata_op op,
                                       const strata_packing* packing, const strata_options* options,
                                       strata_request** req);

/* Persistent forms: bind the call (local: nothing is sent) and write an
 * inactive request to *req; each strata_request_start runs it again on the
 * same buffers, reading the inputs anew. Invalid arguments surface from
 * each run's test or wait. */
strata_status strata_all_reduce_init(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                     strata_op op, const strata_options* options, strata_request** req);
strata_status strata_reduce_init(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                 strata_op op, int root, const strata_options* options, strata_request** req);
strata_status strata_broadcast_init(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                                    const strata_options* options, strata_request** req);
strata_status strata_reduce_scatter_init(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                         strata_dtype dtype, strata_op op, const strata_options* options,
                                         strata_request** req);
strata_status strata_all_gather_init(strata_comm* comm, const void* in, void* out, size_t send_count,
                                     strata_dtype dtype, const strata_options* options, strata_request** req);

/* *flag = 1 once req's run is complete, else 0 (the run goes on). The
 * status is the run's, reported once: STRATA_OK, or its error with
 * *flag = 1 (the run is over). A complete request is inactive: later tests
 * give 1 and STRATA_OK; a persistent one can be started again. An inactive
 * request gives 1 at once. INVALID_ARGUMENT if req or flag is NULL. */
strata_status strata_request_test(strata_request* req, int* flag);

/* Returns when req's run is complete, with its status (once, as test).
 * Returns STRATA_OK at once for an inactive request. INVALID_ARGUMENT if
 * req is NULL. */
strata_status strata_request_wait(strata_request* req);

/* Persistent requests only: starts another run of the bound call.
 * INVALID_ARGUMENT if req is NULL, not persistent, still running (wait for
 * it first) or its communicator was freed. */
strata_status strata_request_start(strata_request* req);

/* Releases *req and sets *req to NULL. An active request (started and not
 * yet reported complete by test or wait) is completed first, as
 * strata_request_wait would (there is no cancel), so its buffers are never
 * written after this returns; its status is returned (the handle is
 * released either way). NULL or *req == NULL is a no-op returning
 * STRATA_OK. */
strata_status strata_request_free(strata_request** req);

/* ---- errors and version ---------------------------------------------------- */

/* The message of the last call on this thread that did not return STRATA_OK
 * ("" if none has failed yet). Successful calls leave it unchanged, so read
 * it right after the failing call. The pointer stays valid until the next
 * failing strata call on this thread; copy the text to keep it. Never NULL. */
const char* strata_last_error(void);

/* The enumerator's name ("STRATA_OK", "STRATA_ERR_MISMATCH", ...), or
 * "STRATA_ERR_UNKNOWN" for a value that is not a strata_status. Static
 * storage; never NULL. */
const char* strata_status_name(strata_status status);

/* The library's version (of the libstrata actually loaded, not of this
 * header). Any of the pointers may be NULL. */
void strata_version(int* major, int* minor, int* patch);

/* The same as text, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
const char* strata_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
