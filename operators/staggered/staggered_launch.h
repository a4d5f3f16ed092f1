// What one application of the staggered D needs, and the per-precision entry point that
// launches it (instantiated by staggered_{double,single,half}.cpp, so that CMake's list of
// those files is the list of precisions built; staggered_launch_impl.h has the bodies).
#pragma once

#include "staggered/staggered.h"

namespace latke::staggered {

struct DslashRequest {
  ColorSpinorField* out;
  const ColorSpinorField* in;
  const ColorSpinorField* x;  ///< xpay input or nullptr
  const GaugeField* fat;
  const GaugeField* lng;  ///< nullptr: naive
  /// Ghost links per split dimension (staggered_kernel.h), stride = face sites of one parity.
  void* const* ghost_fat;
  void* const* ghost_long;
  HaloExchange* halo;  ///< nullptr when nothing is split
  const StaggeredParam* param;
  int depth;  ///< halo depth: 3 improved, 1 naive
  double a, b, long_scale;
};

/// @brief out = a D in + b x for storage type Store, halo exchange included.
template <typename Store>
void launch_dslash(const DslashRequest& rq);

/// Bytes of one face site (a color vector, plus its norm in half precision).
template <typename Store>
constexpr std::size_t face_site_bytes() {
  return 6 * sizeof(Store) + (sizeof(Store) == 2 ? sizeof(float) : 0);
}

}  // namespace latke::staggered
