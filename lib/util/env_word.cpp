#include "util/env_word.hpp"

#include <cstdlib>
#include <string>

#include "util/log.hpp"

namespace strata::util {

int env_word(const char* name, std::initializer_list<std::string_view> words) {
  const char* env = std::getenv(name);
  if (!env || !*env || std::string_view(env) == "auto") return -1;
  int index = 0;
  std::string listed;
  for (const std::string_view word : words) {
    if (word == env) return index;
    listed += std::string(word) + ", ";
    ++index;
  }
  listed.resize(listed.size() - 2);  // "near, far" (words is never empty)
  log(LogLevel::warn, "{}='{}' is not {} or auto: measured instead", name, env, listed);
  return -1;
}

}  // namespace strata::util
