// The human-readable table on stdout, nccl-tests' layout plus strata's
// baseline columns. Only rank 0 calls these; every line is flushed as it is
// printed so that a long sweep shows rows as they are measured.
#pragma once

#include <cstdio>
#include <vector>

#include "results.hpp"

namespace bench {

void print_header(std::FILE* out, const RunInfo& info);
void print_row(std::FILE* out, const RunInfo& info, const Row& row);
void print_footer(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows, const Summary& summary);

}  // namespace bench
