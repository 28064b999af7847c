// Per-call options (TensorFlow's CommunicationOptions) and per-communicator
// configuration.
#pragma once

#include <cstddef>
#include <string>

#include "strata/types.hpp"

namespace strata {

// A CUDA stream (a cudaStream_t) passed opaquely, so that strata's public
// headers need no CUDA header: `reinterpret_cast<strata::StreamHandle>(s)`,
// or `static_cast<strata::StreamHandle>(s)` since cudaStream_t is a pointer.
using StreamHandle = void*;

// Options for one call. Validated on every call; an invalid value raises
// InvalidArgument naming the field before anything is sent.
struct CommunicationOptions {
  // Pack size for batch_all_reduce; 0 = automatic. Signed so that a negative
  // value coming from a binding or a config file is caught, not wrapped.
  long long bytes_per_pack = 0;
  // Bound on the whole call in seconds; 0 = no timeout. Negative, infinite
  // or NaN is invalid; more than 1e9 s (~31 years) counts as 1e9 s. On
  // expiry the call raises DeadlineExceeded naming the ranks that did not
  // arrive, and the communicator is marked broken.
  double timeout_seconds = 0;
  Implementation implementation = Implementation::automatic;
  // CUDA tensors: the stream the call is ordered on. Given (not nullptr),
  // the call is stream-ordered, as NCCL's and TensorFlow's: it enqueues its
  // work after everything enqueued on `stream` before the call, makes
  // `stream` wait for its result, and returns once enqueued; work enqueued
  // on `stream` afterwards sees the result. Errors found after the return
  // (a timeout, which counts from the call; an asynchronous NCCL error)
  // break the communicator and are raised by the next call or
  // Communicator::check(). A stream that is capturing a CUDA graph captures
  // the call. nullptr (the default) is MPI's semantics: the call orders
  // after the legacy default stream of each tensor's device (where
  // cudaMemcpy, kernels launched without a stream and PyTorch's default
  // stream put their work; programs built with --default-stream per-thread
  // pass cudaStreamPerThread) and returns only when the result is in the
  // output tensors. Ignored for host tensors. docs/GPU.md, "Streams".
  StreamHandle stream = nullptr;
};

// TensorFlow's older name for the same options.
using CollectiveHints = CommunicationOptions;

// How batch_all_reduce groups tensors into packs (TensorFlow's num_packs and
// agg_small_grads_*). Precedence: num_packs > 0 wins; else small-gradient
// aggregation when both agg_small_grads_* are > 0; else
// CommunicationOptions::bytes_per_pack (0 = automatic). Tensors of
// different dtypes never share a pack. See docs/ALGORITHMS.md, "Packing".
struct PackingOptions {
  // > 0: concatenate each dtype's tensors and split them into this many packs
  // of nearly equal size (packs may split tensors). Negative is invalid.
  int num_packs = 0;
  // Runs of adjacent tensors of at most this many bytes each are packed
  // together, at most agg_small_grads_max_group per pack; larger tensors go
  // alone. Negative is invalid.
  long long agg_small_grads_max_bytes = 0;
  int agg_small_grads_max_group = 10;
};

// What Config::verify checks after each call (docs/RELIABILITY.md,
// "Integrity checks").
enum class Verification {
  off,       // nothing (the default)
  checksum,  // checksums of every rank's contribution and result, compared in one small all-reduce
};

// Per-communicator configuration, fixed at construction.
struct Config {
  // The all_reduce_spec: "auto", an algorithm name ("xring", "rechd",
  // "pscpu", "tree", "mpi") with optional "#shards", or size-limited tuples
  // ("tree:4k:xring#2"). Empty means: the STRATA_SPEC environment variable
  // if set, else "auto". See docs/ALGORITHMS.md.
  std::string all_reduce_spec;
  // Check, before any data moves, that every rank makes the same call
  // (collective, count, dtype, op, root, memory; for batches the tensors and
  // packing; the spec, implementation hint, chunk_bytes and the call's
  // number): on any difference every rank
  // raises Mismatch naming the fields and which ranks hold which value, and
  // the communicator stays usable. Costs one shared-memory round on one node
  // (none for the shared-memory all-reduce: it rides in its first round) or
  // one small MPI all-reduce across nodes. false, or STRATA_CHECK=off in the
  // environment, turns it off (for measurements); every rank must agree:
  // the constructor raises InvalidArgument on every rank when they do not.
  bool check_calls = true;
  // End-to-end integrity of host-memory calls: with checksum, after each
  // call the ranks compare checksums of what every rank gave and of what
  // every rank holds (one small MPI all-reduce), and every rank raises
  // Corrupted naming the call when the result is not the reduction (or
  // copy) of the contributions; the communicator stays usable. What is and
  // is not detected, and its cost: docs/RELIABILITY.md, "Integrity checks".
  // CUDA tensors are not verified. STRATA_VERIFY=checksum or off in the
  // environment overrides this field (anything else: InvalidArgument).
  // Every rank must agree: the constructor raises InvalidArgument on every
  // rank when they do not.
  Verification verify = Verification::off;
  // Pipeline chunk of the ring algorithms on host memory, in bytes: 0 =
  // built-in default (256 KiB), else 4 KiB .. 1 GiB (InvalidArgument
  // otherwise). CUDA tensors that a host algorithm reduces are staged
  // through pinned host memory in chunks of 4 MiB, or of this size when it
  // is larger (docs/GPU.md).
  std::size_t chunk_bytes = 0;
  // Run started requests (Communicator::iall_reduce, ..., start() of the
  // persistent ones) on a progress thread of this communicator, while the
  // caller computes, where that thread may run them: requests on host
  // memory whose plan makes no MPI call (one node, over shared memory),
  // every host request when MPI was initialised with MPI_THREAD_MULTIPLE.
  // The others run inside test()/wait() as without it. STRATA_PROGRESS_THREAD=1
  // in the environment turns it on too. docs/REQUESTS.md.
  bool progress_thread = false;
  // Reproducible results (docs/REPRODUCIBILITY.md), for floating-point
  // reductions on host memory: "off"; "order": for a given rank count, the
  // same bits whatever the algorithm, spec, node layout, message size,
  // packing and form (blocking, request, persistent, batch); "exact": the
  // same bits for any assignment of the contributions to ranks and with
  // further ranks contributing zeros (sums and means, through exact
  // fixed-point accumulation; min, max and prod as in "order"). Empty: the
  // STRATA_REPRODUCIBLE environment variable if set, else "off". Another
  // value raises InvalidArgument; ranks that differ raise InvalidArgument on
  // every rank. CUDA tensors: "order" for f32 and f64; the f32 accumulation
  // of 16-bit types and "exact" raise Unavailable there.
  std::string reproducible{};
  // f16 and bf16 sums and means accumulate in f32 and round once at the end
  // (always so in the reproducible modes); without it they accumulate in
  // their own type, rounding at every addition (docs/ALGORITHMS.md,
  // "Rounding"). STRATA_ACCUMULATE=f32 turns it on too. Every rank must
  // agree (InvalidArgument on every rank otherwise).
  bool accumulate_f32 = false;
};

}  // namespace strata
