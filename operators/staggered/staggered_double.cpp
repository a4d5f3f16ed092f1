// The staggered kernels instantiated for double-precision storage.
#include "operators/staggered/staggered_launch_impl.h"

namespace latke::staggered {
template void launch_dslash<double>(const DslashRequest&);
}  // namespace latke::staggered
