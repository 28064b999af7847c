#include "repeat.hpp"

#include <cstdint>

#include "log.hpp"
#include "settings.hpp"
#include "util/recent.hpp"

namespace strata::interpose {
namespace {

struct Kept {
  CallKey key;
  KnownRoute route;
  std::uint64_t generation;  // comm_cache's entry_generation() when kept
};
// One list per collective.
util::Recent<Kept> kept[5];

util::Recent<Kept>* kept_of(Collective collective) noexcept {
  switch (collective) {
    case Collective::all_reduce: return &kept[0];
    case Collective::reduce: return &kept[1];
    case Collective::broadcast: return &kept[2];
    case Collective::reduce_scatter: return &kept[3];
    case Collective::all_gather: return &kept[4];
  }
  return nullptr;
}

}  // namespace

const KnownRoute* repeated(const CallKey& key) noexcept {
  util::Recent<Kept>* recent = kept_of(key.collective);
  if (!recent) return nullptr;
  const std::uint64_t generation = entry_generation();
  const Kept* found = recent->find([&](const Kept& k) { return k.key == key && k.generation == generation; });
  if (!found || process_refusal()) return nullptr;
  return &found->route;
}

void remember(const CallKey& key, CommEntry* entry, const Decision& decision) noexcept {
  util::Recent<Kept>* recent = kept_of(key.collective);
  if (!recent || decision.packed || decision.send_packed || logging(Level::trace)) return;
  recent->keep({key, {entry, decision}, entry_generation()});
}

}  // namespace strata::interpose
