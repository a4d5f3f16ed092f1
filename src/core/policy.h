// The halo policy of one stencil call site, chosen once per local lattice and process grid.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/core/halo.h"
#include "src/core/lattice.h"

namespace latke {

/// The choice of choose_policy (halo.h) for one kernel instance, made at its first call on
/// each local lattice and process grid (on every rank at the same call) and remembered, so
/// that later calls cost one map lookup. A call site keeps one as a static.
class PolicyChoice {
 public:
  /// @param key the kernel's part of the tune-cache key (" local ... grid ..." is appended);
  ///        called only when a choice is made.
  int get(const Lattice& lat, const std::function<std::string()>& key, const std::vector<std::string>& names,
          const std::function<double(int)>& time);
  /// The choice already made for lat's local lattice and process grid, or -1: a call site's
  /// hot path asks this first, so that it builds get's arguments only when a choice is made.
  int known(const Lattice& lat) const;

 private:
  static std::array<int, 8> where(const Lattice& lat);
  std::map<std::array<int, 8>, int> chosen_;
};

}  // namespace latke
