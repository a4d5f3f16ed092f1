// The device's copy bandwidth, measured in the same run as a benchmark, so that a kernel's
// effective bandwidth can be stated as a fraction of what the memory delivers.
#pragma once

#include <cstddef>

#include "src/core/backend.h"

namespace latke {

/// @brief GB/s (1e9 bytes, read + written) of a device-to-device (or host memcpy) copy of
/// `bytes`, the median of `reps` timed copies after a warm-up.
double measure_copy_bandwidth(Backend b, std::size_t bytes, int reps = 20);

}  // namespace latke
