// Host reference for the Wilson-clover operator: naive, lexicographic, double precision,
// explicit 4x4 gamma matrices and 3x3 color matrices (Eigen). It shares nothing with the
// optimized kernels but conventions.h, so that agreement between the two means something.
//
// The operator (the same formula as operators/wilson_clover/wilson_clover.h):
//   M psi(x) = (4 + m) psi(x) - 1/2 D_hop psi(x) + C_sw psi(x)
//   D_hop psi(x) = sum_mu [ (1 - gamma_mu) U_mu(x) psi(x + mu) + (1 + gamma_mu) U_mu(x - mu)^dag psi(x - mu) ]
//   C_sw = c_sw (i/4) sum_{mu,nu} sigma_{mu nu} F_{mu nu}(x),  sigma_{mu nu} = (i/2)[gamma_mu, gamma_nu]
//   F_{mu nu}(x) = (1/8) (Q_{mu nu}(x) - Q_{mu nu}(x)^dag), Q_{mu nu} the sum of the four
//   plaquette leaves in the mu-nu plane that start and end at x (counter-clockwise).
// Boundary phases multiply U_mu(x) on the last global slice x_mu = X_mu - 1 when a hop wraps;
// the backward hop takes the complex conjugate (U^dag), so phases are taken to have modulus
// one (periodic, antiperiodic, twisted). They do not enter the clover term (closed loops).
// The apply_* functions size `out` themselves, and `out` may be the same vector as `in`.
#pragma once

#include <array>
#include <complex>
#include <vector>

namespace latke::reference {

using complex = std::complex<double>;
using Coords = std::array<int, 4>;

/// Parameters of the reference operator.
struct WilsonCloverParams {
  Coords dims{};                                           ///< global lattice extents (x,y,z,t)
  double mass = 0.0;                                       ///< bare mass m in M = (4 + m) - D/2 + C_sw
  double csw = 0.0;                                        ///< clover coefficient
  std::array<complex, 4> boundary_phase{1.0, 1.0, 1.0, -1.0};  ///< phase on wrapping links
};

/// @brief D_hop applied to a full lexicographic spinor (dagger: (1 -+ gamma) swapped).
void apply_hopping(std::vector<complex>& out, const std::vector<complex>& gauge,
                   const std::vector<complex>& in, const WilsonCloverParams& p, bool dagger);

/// @brief The site-local term A = (4 + m) + C_sw applied to a full lexicographic spinor.
void apply_clover(std::vector<complex>& out, const std::vector<complex>& gauge,
                  const std::vector<complex>& in, const WilsonCloverParams& p);

/// @brief M (dagger = false) or M^dagger (dagger = true) on a full lexicographic spinor.
void apply_wilson_clover(std::vector<complex>& out, const std::vector<complex>& gauge,
                         const std::vector<complex>& in, const WilsonCloverParams& p,
                         bool dagger);

/// @brief The 12x12 site matrix A(x) = (4 + m) + C_sw(x), row-major ([row*12 + col]),
/// row/col index spin*3 + color; x must lie inside the lattice.
std::array<complex, 144> clover_site_matrix(const std::vector<complex>& gauge,
                                            const WilsonCloverParams& p, const Coords& x);

}  // namespace latke::reference
