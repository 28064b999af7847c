// The flight recorder's file: this process's ring (util/flight_recorder.hpp)
// written as text, one line per call, to
// STRATA_FLIGHT_DIR/flight-<host>-<pid>-rank<world rank>.txt. The writer
// uses only open, write, rename and clock_gettime and formats by hand, so
// a fatal-signal handler may call it (docs/RELIABILITY.md, "Flight
// recorder", has the format; tools/strata-flight reads it). Internal
// header.
#pragma once

#include <string_view>

namespace strata::util::flight {

// Reads STRATA_FLIGHT_DIR and names this process's file, once per process
// (later calls do nothing); makes the folder when it is missing (one
// level). Call after MPI_Init: the name holds the rank in MPI_COMM_WORLD.
void configure_file(int world_rank, int world_size);

// Whether STRATA_FLIGHT_DIR was set (non-empty) when configure_file ran.
bool file_enabled() noexcept;

// The file's path ("" when not enabled).
const char* file_path() noexcept;

// Writes every ring to file_path(), replacing what was there (through
// a temporary file and a rename: readers never see half a file), with
// `reason` ("DeadlineExceeded", "SIGSEGV", "on demand", ...) and `detail`
// (an error's message, or empty) in its header. Returns false, errno set,
// when it could not (or when not enabled). Async-signal-safe.
bool write_file(std::string_view reason, std::string_view detail) noexcept;

}  // namespace strata::util::flight
