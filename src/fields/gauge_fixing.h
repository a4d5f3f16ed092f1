// Gauge fixing to the Coulomb gauge (sum_i d_i A_i = 0 on every time slice) or the Landau gauge
// (sum_mu d_mu A_mu = 0), what gauge-fixed wall sources and gauge-dependent measurements need.
//
// The gauge transformation G maximises F[G] = sum_x sum_mu Re tr[G(x) U_mu(x) G(x+mu)^dag] over
// the directions mu (x, y, z for Coulomb; all four for Landau). Overrelaxation in checkerboard
// sweeps (Mandula and Ogilvie, Phys. Lett. B248 (1990) 156): at every site of one parity G(x) is
// moved towards the maximum of Re tr[G(x) K(x)], K(x) = sum_mu [U_mu(x) G(x+mu)^dag +
// (G(x-mu) U_mu(x-mu))^dag], by the three SU(2) subgroup rotations of su3_update.h, each raised
// to the power omega (1 < omega < 2 overrelaxes; omega = 1 is the local maximum). Both parities
// make one iteration; G's ghosts are refreshed after each, across the fixed directions only (so
// Coulomb gauge fixing on a grid split in t exchanges nothing in t). The links are transformed
// once, at the end, U'_mu(x) = G(x) U_mu(x) G(x+mu)^dag for all four mu.
//
// Fourier-accelerated conjugate gradient (the preconditioner of Davies et al., Phys. Rev. D37
// (1988) 1581, in the nonlinear conjugate gradient of Hudspith, Comput. Phys. Commun. 187 (2015)
// 115): each iteration computes Delta(x) (below) of the transformed links, filters it in
// momentum space over the fixed directions, Delta~ = F^-1[F[Delta] / p^2], p^2 = sum_mu
// 4 sin^2(pi k_mu / L_mu) (zero at p = 0; Coulomb: every time slice on its own), makes the
// direction S = Delta~ + beta S_old (Polak-Ribiere, beta >= 0; steepest ascent where S would not
// ascend) and moves G(x) <- exp(-i lambda S(x)) G(x) (the exponential to second order,
// reunitarized). lambda comes from a line search: the functional's change at a trial step
// (summed site by site, so it stays exact to rounding near convergence) and its slope <S, Delta>
// give a parabola, whose maximum is the step and the next trial (the first: alpha; on free,
// abelian fields the filtered gradient is the whole answer at lambda = 1). The filter gives the
// long wavelengths, which overrelaxation reaches only after many sweeps, the step of the short
// ones. The transforms are LatticeFFT's, across the ranks of split directions too; a local
// extent with a prime factor above 13 leaves the automatic choice to overrelaxation.
//
// Convergence is measured by theta = (1 / (3 V)) sum_x tr[Delta(x) Delta(x)^dag], Delta(x) =
// sum_mu [A_mu(x) - A_mu(x-mu)], A_mu = the traceless anti-Hermitian part of U'_mu divided by 2i
// (the lattice divergence of the gauge potential), every `check_every` iterations; fixing stops
// when theta < tol. The functional is also reported, normalised to 1 for unit links:
// F = (1 / (3 d V)) sum_x sum_mu Re tr U'_mu(x).
#pragma once

#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"

namespace latke {

enum class GaugeFixingType { coulomb, landau };
/// automatic: fourier where LatticeFFT takes the fixed directions' local extents, else
/// overrelaxation.
enum class GaugeFixingMethod { automatic, fourier, overrelaxation };

struct GaugeFixing {
  GaugeFixingType type = GaugeFixingType::coulomb;
  double tol = 1e-12;    ///< stop when theta < tol
  int max_iter = 10000;  ///< iterations (both parities) at most
  double omega = 1.7;    ///< overrelaxation, in [1, 2)
  int check_every = 10;  ///< overrelaxation: iterations between measurements of theta
  GaugeFixingMethod method = GaugeFixingMethod::automatic;
  double alpha = 1.0;  ///< Fourier acceleration: the line search's first trial step, in (0, 2)
};

struct GaugeFixingResult {
  int iterations = 0;
  double theta = 0;       ///< at the end
  double functional = 0;  ///< at the end
  bool converged = false;
  GaugeFixingMethod method = GaugeFixingMethod::overrelaxation;  ///< the one that ran
};

/// "coulomb", "landau".
const char* to_string(GaugeFixingType t);
/// "auto", "fourier", "overrelax" (the options' names).
const char* to_string(GaugeFixingMethod m);
/// @brief A clear error naming the parameter unless p is valid.
void check(const GaugeFixing& p);
/// @brief The method p.method means on this lattice (automatic resolved); a clear error where
/// fourier is asked for and a fixed direction's local extent is one LatticeFFT refuses.
GaugeFixingMethod resolve(const Lattice& lat, const GaugeFixing& p);

/// @brief The links gauge fixed as p says, computed on backend b, from links given as a host
/// array over this rank's local volume (conventions.h layout), returned the same way. Collective
/// over the lattice's ranks. Not converging within max_iter is not an error here: the result says
/// so, and callers decide (latke-propagator refuses it).
std::vector<Complex<double>> fix_gauge(const Lattice& lat, const std::vector<Complex<double>>& links,
                                       const GaugeFixing& p, Backend b, GaugeFixingResult* result);

}  // namespace latke
