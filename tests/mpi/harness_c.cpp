// The harness's C face (harness_c.h) over the program's one RankChecks.
#include "harness_c.h"

#include "harness_checks.hpp"

namespace test = strata::test;

extern "C" {

void strata_test_start(const char* program, int bound_seconds) { test::start_program_checks(program, bound_seconds); }

void strata_test_case(const char* name) { test::program_checks().begin_case(name); }

int strata_test_check(int ok, const char* what) { return test::program_checks().check(ok != 0, what) ? 1 : 0; }

int strata_test_check_every_rank(int ok, const char* what) {
  return test::program_checks().check_every_rank(ok != 0, what) ? 1 : 0;
}

int strata_test_finish(void) { return test::finish_program_checks(); }

int strata_test_finish_rank(void) { return test::program_checks().finish_rank(); }

}  // extern "C"
