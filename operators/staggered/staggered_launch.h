// What one application of the staggered D needs, and the per-precision entry point that
// launches it (instantiated by staggered_{double,single,half}.cpp, so that CMake's list of
// those files is the list of precisions built; staggered_launch_impl.h has the bodies).
#pragma once

#include "operators/staggered/staggered.h"
#include "operators/stencil_faces.h"

namespace latke::staggered {

struct DslashRequest : StencilFields {
  const GaugeField* fat;
  const GaugeField* lng;  ///< nullptr: naive
  /// Ghost links per split dimension (staggered_kernel.h), stride = face sites of one parity.
  void* const* ghost_fat;
  void* const* ghost_long;
  const StaggeredParam* param;
  int depth;  ///< halo depth: 3 improved, 1 naive
  double a, b, long_scale;
};

/// @brief out = a D in + b x for storage type Store, halo exchange included.
template <typename Store>
void launch_dslash(const DslashRequest& rq);

}  // namespace latke::staggered
