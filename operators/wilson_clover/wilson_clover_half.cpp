// The Wilson-clover kernels instantiated for half-precision storage.
#include "wilson_clover/wilson_clover_launch.h"

namespace latke::wilson {
template void launch_dslash<short>(const DslashRequest&);
template void launch_clover<short>(ColorSpinorField&, const ColorSpinorField&, const CloverField&);
}  // namespace latke::wilson
