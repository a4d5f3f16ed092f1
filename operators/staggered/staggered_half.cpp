// The staggered kernels instantiated for half-precision storage.
#include "operators/staggered/staggered_launch_impl.h"

namespace latke::staggered {
template void launch_dslash<short>(const DslashRequest&);
}  // namespace latke::staggered
