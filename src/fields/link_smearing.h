// Smeared gauge links, for smeared quark sources and sinks (and any smoothed observable).
// One step updates every link of the smeared directions at once from the links before it:
//   APE    U' = P_SU(3)[ (1 - alpha) U + alpha / n S ],  n = 2 (d - 1) staples (4 for the
//          three spatial directions, 6 in four), P_SU(3) the nearest SU(3) matrix
//          (su3_smear.h)
//   stout  U' = exp(i Q) U,  Q = (i/2)(W^dag - W) - (i/6) tr(W^dag - W),  W = rho S U^dag
//          (Morningstar and Peardon, Phys. Rev. D69 (2004) 054501, with one rho for every plane)
// S is the sum of U's staples in the planes of the smeared directions, U_nu(x) U_mu(x+nu)
// U_nu(x+mu)^dag + U_nu(x-nu)^dag U_mu(x-nu) U_nu(x-nu+mu) (the adjoint of staples.h's A). With `spatial` only the
// links in x, y and z are smeared, from staples in the spatial planes, and U_t is kept: what smeared sources on a time
// slice use. Both steps are gauge covariant, so smeared links transform as links do.
#pragma once

#include <string>
#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"

namespace latke {

enum class LinkSmearingType { none, ape, stout };

struct LinkSmearing {
  LinkSmearingType type = LinkSmearingType::none;
  int steps = 0;
  double alpha = 0;     ///< APE: alpha in [0, 1]; stout: rho (>= 0)
  bool spatial = true;  ///< smear the spatial links only, from spatial staples
};

/// "none", "ape", "stout".
const char* to_string(LinkSmearingType t);
/// @brief A clear error naming the parameter unless p is a valid smearing.
void check(const LinkSmearing& p);

/// @brief The links smeared as p says, computed on backend b, from links given as a host array
/// over this rank's local volume (conventions.h layout), returned the same way. Collective
/// over the lattice's ranks; the result does not depend on the process grid. Fails naming the
/// deviation when a smeared link is not SU(3) to 1e-10 (a link that is not finite, say).
std::vector<Complex<double>> smear_links(const Lattice& lat, const std::vector<Complex<double>>& links,
                                         const LinkSmearing& p, Backend b);

namespace gauge {
class ExtendedLinks;
/// @brief p's steps on links in place, ghosts up to date after (scratch: a second field of the
/// same lattice and backend, overwritten). Collective.
void smear(ExtendedLinks& links, ExtendedLinks& scratch, const LinkSmearing& p);
}  // namespace gauge

}  // namespace latke
