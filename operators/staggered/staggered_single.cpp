// The staggered kernels instantiated for single-precision storage.
#include "operators/staggered/staggered_launch_impl.h"

namespace latke::staggered {
template void launch_dslash<float>(const DslashRequest&);
}  // namespace latke::staggered
