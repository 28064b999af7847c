#include "guard.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>

#include "strata/types.hpp"

namespace strata::interpose {
namespace {

// Initial-exec: the general model costs a __tls_get_addr call at each of
// the three uses per intercepted call. The library is preloaded or linked;
// loaded late, its 4 bytes still fit glibc's static TLS reserve.
[[gnu::tls_model("initial-exec")]] thread_local int depth = 0;

// libstrata's executable segments, found once with dl_iterate_phdr (glibc's
// list of loaded objects): the object whose segments contain a function we
// know lives in libstrata.
struct CodeRanges {
  static constexpr int kMax = 8;
  std::uintptr_t begin[kMax] = {};
  std::uintptr_t end[kMax] = {};
  int count = 0;

  bool contains(std::uintptr_t address) const {
    for (int i = 0; i < count; ++i)
      if (address >= begin[i] && address < end[i]) return true;
    return false;
  }
};

int collect(dl_phdr_info* info, std::size_t, void* data) {
  auto* ranges = static_cast<CodeRanges*>(data);
  const auto marker = reinterpret_cast<std::uintptr_t>(&strata::dtype_size);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    const std::uintptr_t begin = info->dlpi_addr + p.p_vaddr;
    if (p.p_type == PT_LOAD && marker >= begin && marker < begin + p.p_memsz) mine = true;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum && ranges->count < CodeRanges::kMax; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || !(p.p_flags & PF_X)) continue;
    ranges->begin[ranges->count] = info->dlpi_addr + p.p_vaddr;
    ranges->end[ranges->count] = info->dlpi_addr + p.p_vaddr + p.p_memsz;
    ++ranges->count;
  }
  return 1;  // found: stop iterating
}

const CodeRanges& libstrata_code() {
  static const CodeRanges ranges = [] {
    CodeRanges r;
    dl_iterate_phdr(collect, &r);
    return r;
  }();
  return ranges;
}

}  // namespace

InsideStrata::InsideStrata() { ++depth; }
InsideStrata::~InsideStrata() { --depth; }

bool called_by_strata(const void* caller) noexcept {
  return depth > 0 || libstrata_code().contains(reinterpret_cast<std::uintptr_t>(caller));
}

}  // namespace strata::interpose
