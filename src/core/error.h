// Errors: every check names the input, the value and what was expected. Library code throws
// latke::Error; the PETSc-facing layer and main programs catch it at their boundary.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace latke {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An allocation that did not fit: what asked for the memory may add what it was for and what
/// would fit (rethrowing an OutOfMemory).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}
}  // namespace detail

/// @brief Throw latke::Error with the concatenated message.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::concat(args...));
}

/// @brief Throw latke::Error with the message unless cond holds.
template <typename... Args>
void require(bool cond, const Args&... args) {
  if (!cond) fail(args...);
}

}  // namespace latke
