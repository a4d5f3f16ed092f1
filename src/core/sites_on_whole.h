// Where each rank's sites lie on the whole lattice: for gathering a distributed lattice's data
// onto one rank (multigrid agglomeration: coarse operators and fields).
#pragma once

#include <vector>

#include "src/core/lattice.h"

namespace latke {

/// @brief For every rank r of part's communicator, parity p and local checkerboard site x of
/// part, the checkerboard index on `whole` (the same global extents on one rank) of the same
/// site, at [(r * 2 + p) * part.volume_cb() + x]; the parity is the same on both (local origins
/// are even). Collective over part's communicator.
std::vector<int> sites_on_whole(const Lattice& part, const Lattice& whole);

}  // namespace latke
