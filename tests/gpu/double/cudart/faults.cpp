#include "faults.hpp"

#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "report.hpp"
#include "settings.hpp"

namespace gpu_double {
namespace {

struct Planned {
  Fault kind;
  int rank;  // -1: every rank
  long nth;  // 0: every call
  double seconds;
};

constexpr int kKinds = 9;
constexpr const char* kNames[kKinds] = {"malloc",     "host-alloc", "set-device", "grouped-set-device", "nccl-init",
                                        "nccl-stall", "nccl-hang",  "nccl-error", "nccl-finalize"};

std::atomic<int (*)()> group_probe{nullptr};

[[noreturn]] void bad(const std::string& item, const char* why) {
  std::fprintf(stderr, "strata test double: STRATA_FAKE_FAULTS item '%s': %s (kind@rank[#nth][:seconds])\n",
               item.c_str(), why);
  std::abort();
}

std::vector<Planned> parse(std::string_view text) {
  std::vector<Planned> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string item(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t at = item.find('@');
    if (at == std::string::npos) bad(item, "no @rank");
    Planned p{Fault::malloc, -1, 1, 30};
    const std::string kind = item.substr(0, at);
    int k = 0;
    while (k < kKinds && kind != kNames[k]) ++k;
    if (k == kKinds) bad(item, "unknown kind");
    p.kind = Fault(k);
    std::string rest = item.substr(at + 1);
    if (const std::size_t colon = rest.find(':'); colon != std::string::npos) {
      p.seconds = std::atof(rest.c_str() + colon + 1);
      if (p.seconds <= 0) bad(item, "seconds must be > 0");
      rest.resize(colon);
    }
    if (const std::size_t hash = rest.find('#'); hash != std::string::npos) {
      p.nth = rest.compare(hash + 1, std::string::npos, "*") == 0 ? 0 : std::atol(rest.c_str() + hash + 1);
      if (p.nth < 0 || (p.nth == 0 && rest.compare(hash + 1, std::string::npos, "*") != 0))
        bad(item, "nth counts from 1 (or * for every call)");
      rest.resize(hash);
    }
    if (rest != "*") {
      char* end = nullptr;
      p.rank = int(std::strtol(rest.c_str(), &end, 10));
      if (rest.empty() || *end != '\0' || p.rank < 0) bad(item, "rank must be a number or *");
    }
    out.push_back(p);
  }
  return out;
}

struct Plan {
  std::mutex mutex;
  std::vector<Planned> list = parse(settings().faults);
  long calls[kKinds] = {};
};

Plan& plan() {
  static Plan& p = *new Plan;
  return p;
}

}  // namespace

bool fault_now(Fault kind, double* seconds) {
  Plan& p = plan();
  std::lock_guard lock(p.mutex);
  const long n = ++p.calls[int(kind)];
  for (const Planned& f : p.list)
    if (f.kind == kind && (f.rank < 0 || f.rank == settings().world_rank) && (f.nth == 0 || f.nth == n)) {
      if (seconds) *seconds = f.seconds;
      trace(fmt::format("injecting fault {} (call {} of its kind)", kNames[int(kind)], n));
      return true;
    }
  return false;
}

void set_group_probe(int (*depth)()) { group_probe = depth; }

bool in_nccl_group() {
  int (*probe)() = group_probe.load();
  return probe && probe() > 0;
}

}  // namespace gpu_double

extern "C" void strata_double_set_faults(const char* spec) {
  using namespace gpu_double;
  Plan& p = plan();
  std::lock_guard lock(p.mutex);
  p.list = parse(spec ? spec : "");
  for (long& n : p.calls) n = 0;
}

namespace gpu_double {

}  // namespace gpu_double
