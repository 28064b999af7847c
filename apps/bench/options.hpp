// strata-bench's command line: nccl-tests' flags plus strata's own, parsed
// once into a plain value the driver reads.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "strata/types.hpp"

namespace bench {

enum class CollectiveKind { all_reduce, reduce, broadcast, batch, reduce_scatter, all_gather };

// What --baseline times next to strata: nothing, the MPI library's own
// collective, or raw NCCL (CUDA memory only).
enum class Baseline { none, mpi, nccl };

// How strata's call is made in the timed loop (--form): the blocking call;
// the non-blocking one (i* then Request::wait); or a persistent request
// (*_init) bound once per size, start() then wait() per call.
enum class Form { blocking, nonblocking, persistent };

struct Options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 64ull << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  strata::DataType dtype = strata::DataType::f32;
  strata::ReduceOp op = strata::ReduceOp::sum;
  int root = 0;
  // Config::all_reduce_spec; empty: STRATA_SPEC if set, else "auto" (what
  // strata does for any application that leaves the spec empty).
  std::string algorithm;
  CollectiveKind collective = CollectiveKind::all_reduce;
  std::string model;  // --collective batch only
  bool in_place = false;
  // Host buffers start this many bytes past a page boundary (0: page-aligned).
  std::size_t offset = 0;
  strata::Memory memory = strata::Memory::host;
  double timeout_seconds = 0;
  // Packing for --collective batch (CommunicationOptions::bytes_per_pack,
  // PackingOptions::num_packs); 0 = strata's automatic packing.
  long long bytes_per_pack = 0;
  int num_packs = 0;
  Baseline baseline = Baseline::none;
  Form form = Form::blocking;
  bool progress_thread = false;  // Config::progress_thread
  // --memory cuda: every call of strata's gets a CUDA stream of the bench's
  // (CommunicationOptions::stream) and returns once its work is enqueued;
  // the bench times the call's host cost and its device time (events on
  // that stream). The blocking form only.
  bool stream_ordered = false;
  // Per size, how much of a call a computation hides: with a started form,
  // a host computation between start and wait (OSU's osu_iallreduce
  // method); with --stream-ordered, strata::bench::busy_kernel on another
  // stream of the device.
  bool overlap = false;
  // --overlap's computation: a CPU-bound loop (spin), or a sleep that
  // leaves the core free, as a host thread waiting on its GPU or on I/O does.
  bool overlap_sleep = false;
  // Host memory: rank 0's single-core memcpy bandwidth; CUDA memory: rank
  // 0's pinned device->host and host->device copy bandwidth.
  bool memcpy_reference = false;
  std::string json_path;
  std::string csv_path;
  bool quiet_progress = false;
};

// A bad flag or value: main prints `what()` on one line and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv (after MPI_Init: it asks MPI whether it is CUDA-aware).
// Returns nullopt when --help was asked for, with the help text in
// `*help_text`; throws UsageError for anything it cannot accept.
std::optional<Options> parse_options(int argc, char** argv, std::string* help_text);

// "8", "64k", "1M", "2G" (powers of 1024, case-insensitive, optional "B"/"iB").
std::size_t parse_size(const std::string& text);

// "64 MiB", "512 B": for progress lines and the header (tables print plain
// bytes, as nccl-tests does).
std::string human_bytes(std::size_t bytes);

std::string_view to_string(CollectiveKind kind);
std::string_view to_string(Form form);

}  // namespace bench
