// The Wilson-clover kernels instantiated for double-precision storage.
#include "operators/wilson_clover/wilson_clover_launch_impl.h"

namespace latke::wilson {
template void launch_dslash<double>(const DslashRequest&);
template void launch_clover<double>(ColorSpinorField&, const ColorSpinorField&, const CloverField&);
}  // namespace latke::wilson
