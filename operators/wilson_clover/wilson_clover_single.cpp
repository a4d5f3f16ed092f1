// The Wilson-clover kernels instantiated for single-precision storage.
#include "operators/wilson_clover/wilson_clover_launch_impl.h"

namespace latke::wilson {
template void launch_dslash<float>(const DslashRequest&);
template void launch_clover<float>(ColorSpinorField&, const ColorSpinorField&, const CloverField&);
}  // namespace latke::wilson
