// Building the site term A = (4 + m) + C_sw and its inverse from the links, on the backend.
#pragma once

#include <vector>

#include "src/core/complex.h"
#include "src/fields/clover_field.h"

namespace latke::wilson {

/// @brief Fill s A and (s A)^-1 (double-precision clover fields on the backend) from this
/// rank's links (host, lexicographic); s = 1 for mass normalisation, 2 kappa for kappa. Fails
/// naming the number of sites whose 6x6 blocks of A are singular.
void build_clover(const Lattice& lat, const std::vector<Complex<double>>& host_links, double mass, double csw,
                  double scale, CloverField& a, CloverField& a_inv);

}  // namespace latke::wilson
