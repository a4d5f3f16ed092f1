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
  /// @param time seconds per call of candidate i, called only when a choice is made.
  /// @param repeatable false for a call that must run once (it updates in place, so timing the
  ///        candidates on its fields would change the result): it takes the choice already
  ///        made, else candidate 0, and makes none.
  /// After the first call on a lattice one map lookup: key and time are wrapped (std::function,
  /// which may allocate) only where a choice is made.
  template <typename Key, typename Time>
  int get(const Lattice& lat, const Key& key, const std::vector<std::string>& names, const Time& time,
          bool repeatable = true) {
    const int c = known(lat);
    if (c >= 0) return c;
    return repeatable ? choose(lat, key, names, time) : 0;
  }
  /// The choice already made for lat's local lattice and process grid, or -1.
  int known(const Lattice& lat) const;

 private:
  int choose(const Lattice& lat, const std::function<std::string()>& key, const std::vector<std::string>& names,
             const std::function<double(int)>& time);
  static std::array<int, 8> where(const Lattice& lat);
  std::map<std::array<int, 8>, int> chosen_;
};

}  // namespace latke
