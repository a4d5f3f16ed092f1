// Links on the local volume extended by `depth` sites in every direction, corners included,
// gathered from neighbouring ranks by one exchange per dimension (the halo of a dimension
// exchanged after those before it, which carries the corners along). Setup-time only: the
// clover term needs the links of every plaquette touching a site (depth 1), asqtad
// fattening those of paths reaching two sites away (depth 2).
#pragma once

#include <vector>

#include "src/core/complex.h"
#include "src/core/lattice.h"

namespace latke {

/// @brief Extended links, lexicographic over extents L_mu + 2 depth ([site][mu][row][col]);
/// local site x sits at x + (depth, depth, depth, depth). Every local extent must be at
/// least depth.
std::vector<Complex<double>> extended_gauge(const Lattice& lat, const std::vector<Complex<double>>& local,
                                            int depth = 1);

}  // namespace latke
