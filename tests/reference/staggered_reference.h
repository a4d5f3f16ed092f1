// Host reference for the staggered operators: naive, lexicographic, double precision, Eigen
// 3x3 color matrices, every path of the fat links walked link by link. It shares nothing
// with the optimized kernels but conventions.h, so that agreement between the two means
// something.
//
// The operator (the same formula as operators/staggered/staggered.h):
//   M chi(x) = 2m chi(x) + D chi(x)
//   D chi(x) = sum_mu eta_mu(x) [ V_mu(x) chi(x + mu) - V_mu(x - mu)^dag chi(x - mu)
//                                + W_mu(x) chi(x + 3mu) - W_mu(x - 3mu)^dag chi(x - 3mu) ]
// eta_mu(x) = (-1)^(x_0 + ... + x_{mu-1}); naive: W = 0. Boundary phases multiply the links
// that wrap around the lattice: V_mu(y) with y_mu = X_mu - 1 and W_mu(y) with
// y_mu >= X_mu - 3 (the adjoint then takes the conjugate), so phases have modulus one.
// Fields: color vectors [site][color] (3 complex numbers per site), links as gauge fields
// [site][mu][row][col]. The apply_* functions size `out` themselves; out may alias in.
#pragma once

#include <array>
#include <complex>
#include <vector>

namespace latke::reference {

using complex = std::complex<double>;
using Coords = std::array<int, 4>;

struct StaggeredParams {
  Coords dims{};          ///< global lattice extents (x,y,z,t)
  double mass = 0.0;      ///< m in M = 2m + D
  bool improved = false;  ///< with the long (Naik) links
  std::array<complex, 4> boundary_phase{1.0, 1.0, 1.0, -1.0};
};

/// @brief out = D in (lng is ignored unless p.improved).
void apply_staggered_dslash(std::vector<complex>& out, const std::vector<complex>& fat, const std::vector<complex>& lng,
                            const std::vector<complex>& in, const StaggeredParams& p);

/// @brief out = M in = (2m + D) in, or M^dag in = (2m - D) in.
void apply_staggered(std::vector<complex>& out, const std::vector<complex>& fat, const std::vector<complex>& lng,
                     const std::vector<complex>& in, const StaggeredParams& p, bool dagger);

/// Coefficient of every path of a kind (staggered.h: one link, the 3-, 5- and 7-link
/// staples, the Lepage term, the Naik term).
struct FatteningCoefficients {
  double one_link = 0, three_staple = 0, five_staple = 0, seven_staple = 0, lepage = 0, naik = 0;
};

/// @brief Fat and long links of a periodic lattice of extents dims: each path (x -> x + mu
/// for fat links, the straight three-link path for long ones) summed with its coefficient,
/// every signed orthogonal direction and ordering enumerated. The links are used as given
/// (whatever phases they carry stay in the products).
void fatten(std::vector<complex>& fat, std::vector<complex>& lng, const std::vector<complex>& thin, const Coords& dims,
            const FatteningCoefficients& c);

}  // namespace latke::reference
