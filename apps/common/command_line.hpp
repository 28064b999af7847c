// The apps' shared shape of a command line and of main's error policy, so
// that every app parses, asks for help and fails the same way.
#pragma once

#include <mpi.h>

#include <boost/program_options.hpp>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>

namespace strata_apps {

// Parses argv against `description` into `vm` (no positional words).
// Returns false when --help was given, the description then in
// *help_text; throws UsageError(what) for anything Boost cannot parse.
template <class UsageError>
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& description,
                        boost::program_options::variables_map& vm, std::string* help_text) {
  namespace po = boost::program_options;
  try {
    po::store(po::command_line_parser(argc, argv).options(description).positional({}).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (!vm.count("help")) return true;
  std::ostringstream text;
  text << description;
  *help_text = text.str();
  return false;
}

// Runs an MPI app's `body` and returns its exit status. A UsageError is
// raised alike on every rank (all parsed the same arguments): rank 0 prints
// one line and every rank returns `usage_status`. Any other exception may
// be on one rank only while its peers wait in a collective: the rank says
// what and the whole job is aborted with `error_status` rather than hang.
template <class UsageError>
int run_mpi_app(const char* app, int rank, int usage_status, int error_status, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "%s: %s (see --help)\n", app, e.what());
    return usage_status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", app, rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, error_status);
    return error_status;
  }
}

}  // namespace strata_apps
