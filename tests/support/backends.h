// What the single-process test files share: the backends this machine has, and the message
// of the latke::Error a call throws.
#pragma once

#include <string>
#include <vector>

#include "src/core/backend.h"
#include "src/core/error.h"

namespace latke::test {

/// The CPU backend, and CUDA when a device is visible.
inline std::vector<Backend> available_backends() {
  std::vector<Backend> b{Backend::cpu};
  if (cuda_device_count() > 0) b.push_back(Backend::cuda);
  return b;
}

/// The message of the latke::Error f() throws; empty when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace latke::test
