// host::shm::direct's sizes: which verdict a timed cross-memory read gives,
// and which sizes of each collective read directly under each verdict.
#include <doctest/doctest.h>

#include "host/shm_direct_sizes.hpp"

using namespace strata::host::shm::direct;

TEST_CASE("a read at most kCheapReadNs is cheap; a longer one, a failed one or none is dear") {
  CHECK(read_cost_for(500) == ReadCost::cheap);
  CHECK(read_cost_for(kCheapReadNs) == ReadCost::cheap);
  CHECK(read_cost_for(kCheapReadNs + 1) == ReadCost::dear);
  CHECK(read_cost_for(4000) == ReadCost::dear);
  CHECK(read_cost_for(-1) == ReadCost::dear);
  CHECK(read_cost_for(0) == ReadCost::dear);
}

TEST_CASE("cheap reads start each collective's direct range lower; unmeasured takes the dear sizes") {
  CHECK(&sizes_for(ReadCost::cheap) == &kCheapReads);
  CHECK(&sizes_for(ReadCost::dear) == &kDearReads);
  CHECK(&sizes_for(ReadCost::unmeasured) == &kDearReads);
  CHECK(kCheapReads.broadcast.from == 8 * 1024);
  CHECK(kCheapReads.reduce.from == 16 * 1024);
  CHECK(kCheapReads.all_reduce.from == 32 * 1024);
  CHECK(kDearReads.broadcast.from == 16 * 1024);
  CHECK(kDearReads.reduce.from == 32 * 1024);
  CHECK(kDearReads.all_reduce.from == 64 * 1024);
  CHECK(kCheapReads.all_gather.from == 8 * 1024);
  CHECK(kDearReads.all_gather.from == 16 * 1024);
  // Where reads are cheap, broadcast goes back to the rounds above 1 MiB,
  // reduce above 512 KiB everywhere; all-reduce and all-gather never do.
  CHECK(kCheapReads.broadcast.up_to == 1024 * 1024);
  CHECK(kDearReads.broadcast.up_to == SIZE_MAX);
  CHECK(kCheapReads.reduce.up_to == 512 * 1024);
  CHECK(kDearReads.reduce.up_to == 512 * 1024);
  CHECK(kCheapReads.all_reduce.up_to == SIZE_MAX);
  CHECK(kCheapReads.all_gather.up_to == SIZE_MAX);
}

TEST_CASE("a range holds its ends and what lies between, nothing else") {
  const Range reduce = kCheapReads.reduce;
  CHECK_FALSE(reduce.holds(reduce.from - 1));
  CHECK(reduce.holds(reduce.from));
  CHECK(reduce.holds(reduce.up_to));
  CHECK_FALSE(reduce.holds(reduce.up_to + 1));
  CHECK(kDearReads.broadcast.holds(SIZE_MAX));
  CHECK_FALSE(kCheapReads.broadcast.holds(SIZE_MAX));
  CHECK_FALSE(Range{}.holds(0));
}
