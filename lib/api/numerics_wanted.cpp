#include "api/numerics_wanted.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::api {

plan::Numerics numerics_wanted(const Config& config) {
  plan::Numerics numerics;
  const char* env = std::getenv("STRATA_REPRODUCIBLE");
  const bool from_config = !config.reproducible.empty();
  const std::string_view text = from_config ? std::string_view(config.reproducible) : env && *env ? env : "off";
  const auto mode = plan::parse_reproducible(text);
  if (!mode)
    throw InvalidArgument(util::located(fmt::format("{} = '{}' must be off, order or exact",
                                                    from_config ? "config.reproducible" : "STRATA_REPRODUCIBLE",
                                                    text)));
  numerics.reproducible = *mode;
  numerics.accumulate_f32 = config.accumulate_f32;
  if (const char* accumulate = std::getenv("STRATA_ACCUMULATE"); accumulate && *accumulate) {
    const std::string_view value(accumulate);
    if (value == "f32") numerics.accumulate_f32 = true;
    else if (value != "native")
      throw InvalidArgument(util::located(
          fmt::format("STRATA_ACCUMULATE = '{}' must be f32 (16-bit sums accumulate in f32) or native", value)));
  }
  return numerics;
}

}  // namespace strata::api
