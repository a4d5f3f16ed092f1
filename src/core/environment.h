// Latke's environment switches (LATKE_*, read where they act): a value from a fixed set, any
// other refused with the variable, the value and the choices.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "src/core/error.h"

namespace latke {

/// @brief Environment variable `name`: one of `allowed`, or the first of them where it is unset
/// or empty. Any other value fails: "NAME 'value': expected a, b or c".
inline std::string env_choice(const char* name, std::initializer_list<const char*> allowed) {
  const char* v = std::getenv(name);
  if (!v || !*v) return *allowed.begin();
  std::string list;
  std::size_t i = 0;
  for (const char* a : allowed) {
    if (std::string(v) == a) return v;
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(a);
    ++i;
  }
  fail(name, " '", v, "': expected ", list);
}

}  // namespace latke
