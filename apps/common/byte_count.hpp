// Byte counts on the apps' command lines (strata-bench -b/-e, strata-topo
// --sizes, strata-gpu-kernels --bytes): digits with an optional k, M or G
// suffix, powers of 1024 as in nccl-tests ("64k", "64kb" and "64kib" all
// mean 65536). One parser, so every app accepts and refuses the same text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace strata_apps {

// The count `text` spells, or nullopt with `why` (one phrase, for the app's
// usage message) when it is not a count, has an unknown suffix, or does not
// fit in 64 bits. Never throws.
std::optional<std::size_t> parse_byte_count(std::string_view text, std::string& why);

}  // namespace strata_apps
