// Run-time autotuning of launch geometry, keyed by kernel and problem size (QUDA's idea):
// the first launch of a tunable kernel times each candidate block size and remembers the
// fastest for the rest of the process.
#pragma once

#include <string>

namespace latke {

/// @brief The tuned block size for key, or 0 when not yet tuned.
int tuned_block_size(const std::string& key);
/// @brief Remember the block size chosen for key.
void store_block_size(const std::string& key, int block, double ms);
/// @brief Whether tuning is on (default; LATKE_TUNE=0 in the environment turns it off).
bool tuning_enabled();
/// @brief Every tuned key with its block size and time, one per line (for reports).
std::string tune_report();

}  // namespace latke
