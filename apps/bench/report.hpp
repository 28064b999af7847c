// The human-readable table on stdout, nccl-tests' layout plus strata's
// baseline columns. Only rank 0 calls these; every line is flushed as it is
// printed so that a long sweep shows rows as they are measured (Output
// flushes each write and remembers a failure for the end of the run).
#pragma once

#include <vector>

#include "output.hpp"
#include "results.hpp"

namespace bench {

void print_header(Output& out, const RunInfo& info);
void print_row(Output& out, const RunInfo& info, const Row& row);
void print_footer(Output& out, const RunInfo& info, const std::vector<Row>& rows, const Summary& summary);

}  // namespace bench
