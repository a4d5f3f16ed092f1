// Run-time autotuning of launch geometry, keyed by kernel and problem size (QUDA's idea):
// the first launch of a tunable kernel times each candidate block size and remembers the
// fastest for the rest of the process. With LATKE_RESOURCE_PATH set to a directory the
// choices are also kept there (latke_tunecache.tsv, for the device it names) across runs:
// loaded at the first launch, written by LatkeFinalize (rank 0; PetscFinalize calls it where a
// program did not) when this run tuned more, as QUDA's tunecache in QUDA_RESOURCE_PATH.
#pragma once

#include <string>

namespace latke {

/// @brief The tuned block size for key (from this run or the cache file), or 0 when not yet tuned.
int tuned_block_size(const std::string& key);
/// @brief Remember the block size chosen for key.
void store_block_size(const std::string& key, int block, double ms);
/// @brief Whether tuning is on (default; LATKE_TUNE=0 in the environment turns it off).
bool tuning_enabled();
/// @brief Every tuned key with its block size and time, one per line (for reports).
std::string tune_report();
/// @brief Write the cache to LATKE_RESOURCE_PATH/latke_tunecache.tsv when that is set and this
/// run tuned kernels the file lacked (written to a temporary file, then renamed); fails naming
/// the path when it cannot be written.
void save_tune_cache();
/// @brief Merge the timed choices of a cache file made on this device into this run's cache;
/// returns how many it held (0 for a missing file, or one made for another device).
int read_tune_cache(const std::string& path);
/// @brief Write this run's timed choices to path (a temporary file, then renamed).
void write_tune_cache(const std::string& path);
/// @brief The device a cache file's choices hold for (name and multiprocessor count).
std::string tune_cache_device();

}  // namespace latke
