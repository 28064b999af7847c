// topo::cores_shared: ranks outnumber the cores they may run on, per host
// (virtual nodes of one host count together); and the wait style it sets.
#include <doctest/doctest.h>

#include "topo/placement.hpp"

using strata::RankInfo;
using strata::Topology;
using strata::topo::cores_shared;

namespace {

RankInfo rank_on(const char* host, std::vector<int> cores) {
  RankInfo r;
  r.hostname = host;
  r.bound_cores = std::move(cores);
  return r;
}

}  // namespace

TEST_CASE("one rank per core is not sharing, bound or not") {
  Topology bound;
  bound.ranks = {rank_on("a", {0}), rank_on("a", {1})};
  CHECK_FALSE(cores_shared(bound, 0));
  Topology unbound;  // unbound ranks list every core of the host
  unbound.ranks = {rank_on("a", {0, 1}), rank_on("a", {0, 1})};
  CHECK_FALSE(cores_shared(unbound, 1));
}

TEST_CASE("more ranks than the cores they may use share cores") {
  Topology oversubscribed;  // 3 ranks on 2 cores, unbound
  oversubscribed.ranks = {rank_on("a", {0, 1}), rank_on("a", {0, 1}), rank_on("a", {0, 1})};
  CHECK(cores_shared(oversubscribed, 0));
  Topology same_core;  // two ranks bound to one core
  same_core.ranks = {rank_on("a", {3}), rank_on("a", {3})};
  CHECK(cores_shared(same_core, 1));
  Topology unknown;
  unknown.ranks = {rank_on("a", {})};
  CHECK(cores_shared(unknown, 0));
}

TEST_CASE("hosts count apart") {
  Topology two_hosts;  // 2 ranks on each of two 2-core hosts
  two_hosts.ranks = {rank_on("a", {0, 1}), rank_on("a", {0, 1}), rank_on("b", {0, 1}), rank_on("b", {0, 1})};
  CHECK_FALSE(cores_shared(two_hosts, 0));
  CHECK_FALSE(cores_shared(two_hosts, 3));
  two_hosts.ranks.push_back(rank_on("b", {0, 1}));  // host b now has 3 ranks on 2 cores
  CHECK_FALSE(cores_shared(two_hosts, 0));
  CHECK(cores_shared(two_hosts, 4));
}
