// The Wilson-clover kernels instantiated for half-precision storage.
#include "operators/wilson_clover/wilson_clover_launch_impl.h"

namespace latke::wilson {
template void launch_dslash<short>(const DslashRequest&);
template void launch_clover<short>(ColorSpinorField&, const ColorSpinorField&, const CloverField&);
}  // namespace latke::wilson
