// Where each rank's sites lie on a coarser distribution of the same lattice: for gathering a
// distributed lattice's data onto fewer ranks (multigrid agglomeration: coarse operators and
// fields).
#pragma once

#include <mpi.h>

#include <vector>

#include "src/core/lattice.h"

namespace latke {

/// @brief For every rank r of `group` (ranks of part's communicator whose parts all lie inside
/// this rank's local lattice of `onto`, the same global extents on fewer ranks), parity p and
/// local checkerboard site x of part, the checkerboard index on this rank's part of `onto` of
/// the same site, at [(r * 2 + p) * part.volume_cb() + x]; the parity is the same on both
/// (local origins are even). Collective over `group`; fails naming the lattices where a
/// member's part lies outside.
std::vector<int> sites_on_domain(const Lattice& part, const Lattice& onto, MPI_Comm group);

}  // namespace latke
