// Where rank 0's results go: stdout (the table) and the files named by
// -J/--json and --csv. A write that fails (a full disk, a closed stdout,
// /dev/full) is remembered, never thrown: rank 0 keeps taking part in every
// collective, and the run checks `error()` once at the end, when all ranks
// agree on the exit status. Every write is flushed, so a failure shows up at
// the write that caused it, not at a close whose status nobody reads.
// A file is written under a temporary name beside it and renamed to its own
// when closed complete, so that a run that fails or is interrupted
// (interrupt.hpp) leaves no half-written file under the name asked for.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace bench {

class Output {
 public:
  // stdout, borrowed (never closed here).
  static Output standard_output();
  // `path` opened for writing on behalf of `flag` ("--csv"): a temporary
  // file beside it (`path`.partial.<pid>), or `path` itself when it exists
  // and is not a regular file (/dev/null, a pipe). A failure to open is
  // remembered like a failed write.
  static Output file(const std::string& flag, const std::string& path);
  // Nothing: every write succeeds and goes nowhere (a rank other than 0, a
  // flag not given).
  Output() = default;

  Output(Output&& other) noexcept;
  Output& operator=(Output&& other) noexcept;
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output();

  // Writes and flushes `text`; after the first failure, writes nothing more.
  void write(std::string_view text);
  // Flushes and, for a file, closes it (a close can fail too: NFS, quotas)
  // and renames the temporary file to its own name, or removes it after a
  // failure.
  void close();
  // "" or one line naming the output and why: "cannot write --csv
  // '/dev/full': No space left on device".
  const std::string& error() const { return error_; }

 private:
  Output(std::FILE* file, bool owned, std::string name) : file_(file), owned_(owned), name_(std::move(name)) {}
  void fail(int error_number);
  void discard_temporary();

  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::string name_;  // "stdout" or "--csv '/path'"
  std::string error_;
  std::string path_, temporary_;  // temporary_ empty: writing path_ itself
  int interrupt_slot_ = -1;       // interrupt::remember's, while temporary_ exists
};

// Collective: whether none of rank 0's `outputs` has failed, the same answer
// on every rank (rank 0's, broadcast), so that all ranks exit with one
// status. Rank 0 prints each failure on stderr, one line each.
bool outputs_ok(MPI_Comm comm, std::initializer_list<const Output*> outputs);

}  // namespace bench
