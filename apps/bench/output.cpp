// C stdio rather than iostreams: fwrite, fflush and fclose report failure
// with errno, so the message can say why (iostreams only set failbit).
#include "output.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "interrupt.hpp"

namespace bench {

Output Output::standard_output() { return Output(stdout, false, "stdout"); }

Output Output::file(const std::string& flag, const std::string& path) {
  Output out(nullptr, true, fmt::format("{} '{}'", flag, path));
  out.path_ = path;
  struct stat info {};
  const bool special = stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
  if (!special) {
    out.temporary_ = fmt::format("{}.partial.{}", path, getpid());
    out.interrupt_slot_ = interrupt::remember(out.temporary_);
  }
  errno = 0;
  out.file_ = std::fopen(special ? path.c_str() : out.temporary_.c_str(), "w");
  if (!out.file_) {
    out.fail(errno);
    out.discard_temporary();
  }
  return out;
}

Output::Output(Output&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      owned_(other.owned_),
      name_(std::move(other.name_)),
      error_(std::move(other.error_)),
      path_(std::move(other.path_)),
      temporary_(std::exchange(other.temporary_, "")),
      interrupt_slot_(std::exchange(other.interrupt_slot_, -1)) {}

Output& Output::operator=(Output&& other) noexcept {
  if (this != &other) {
    if (owned_ && file_) std::fclose(file_);
    discard_temporary();
    file_ = std::exchange(other.file_, nullptr);
    owned_ = other.owned_;
    name_ = std::move(other.name_);
    error_ = std::move(other.error_);
    path_ = std::move(other.path_);
    temporary_ = std::exchange(other.temporary_, "");
    interrupt_slot_ = std::exchange(other.interrupt_slot_, -1);
  }
  return *this;
}

Output::~Output() {
  if (owned_ && file_) std::fclose(file_);  // close() was not reached: an error path already
  discard_temporary();
}

void Output::discard_temporary() {
  if (temporary_.empty()) return;
  std::remove(temporary_.c_str());
  interrupt::release(interrupt_slot_);
  interrupt_slot_ = -1;
  temporary_.clear();
}

void Output::fail(int error_number) {
  if (!error_.empty()) return;  // the first failure is the one that explains
  error_ = fmt::format("cannot write {}: {}", name_,
                       error_number ? std::strerror(error_number) : "the write failed");
}

void Output::write(std::string_view text) {
  if (!file_ || !error_.empty()) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0 ||
      std::ferror(file_))
    fail(errno);
}

void Output::close() {
  if (!file_) return;
  errno = 0;
  if (std::fflush(file_) != 0 || std::ferror(file_)) fail(errno);
  if (owned_) {
    errno = 0;
    if (std::fclose(file_) != 0) fail(errno);
  }
  file_ = nullptr;
  if (temporary_.empty()) return;
  // Complete: under its own name. Not complete: nowhere.
  errno = 0;
  if (error_.empty() && std::rename(temporary_.c_str(), path_.c_str()) == 0) {
    interrupt::release(interrupt_slot_);
    interrupt_slot_ = -1;
    temporary_.clear();
    return;
  }
  if (error_.empty()) fail(errno);
  discard_temporary();
}

bool outputs_ok(MPI_Comm comm, std::initializer_list<const Output*> outputs) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int ok = 1;
  if (rank == 0)
    for (const Output* out : outputs)
      if (!out->error().empty()) {
        fmt::print(stderr, "strata-bench: {}\n", out->error());
        ok = 0;
      }
  std::fflush(stderr);
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  return ok == 1;
}

}  // namespace bench
