// Latke's physics conventions, in one place. Every kernel and the host reference take the
// gamma basis, the coordinate order, the parity rule, the boundary phases and the host
// (lexicographic) layout from here and from nowhere else.
//
// Gamma basis: DeGrand-Rossi (chiral), Euclidean, Hermitian gammas, with
//   gamma_1 = [[0,0,0,i],[0,0,i,0],[0,-i,0,0],[-i,0,0,0]]
//   gamma_2 = [[0,0,0,-1],[0,0,1,0],[0,1,0,0],[-1,0,0,0]]
//   gamma_3 = [[0,0,i,0],[0,0,0,-i],[-i,0,0,0],[0,i,0,0]]
//   gamma_4 = [[0,0,1,0],[0,0,0,1],[1,0,0,0],[0,1,0,0]]
//   gamma_5 = gamma_1 gamma_2 gamma_3 gamma_4 = diag(1, 1, -1, -1).
// Index mu = 0,1,2,3 is x,y,z,t (gamma_1..gamma_4). sigma_{mu nu} = (i/2)[gamma_mu, gamma_nu]
// is block diagonal: chiral block 0 is spins {0,1}, block 1 is spins {2,3}.
//
// Coordinates (x, y, z, t), x fastest, t slowest. Parity of a site = (x+y+z+t) mod 2 in
// global coordinates; local extents are even, so local and global parity agree.
// U_mu(x) is the link from x to x + mu-hat. Boundary phases multiply the links U_mu(x) with
// x_mu = X_mu - 1 (the last slice) when a hop wraps around the global lattice: periodic in
// space, antiperiodic in time by default. Generally a hop of k sites along mu (k = 1, or 3
// for the staggered Naik term) that wraps around the global lattice, x_mu + k >= X_mu going
// forward, picks up the phase; going backward (x_mu - k < 0) its complex conjugate.
//
// Staggered phases (the spin structure of staggered fermions, in the same coordinate order):
//   eta_mu(x) = (-1)^(x_0 + ... + x_{mu-1}),  x_0 = x, x_1 = y, x_2 = z, x_3 = t (global),
// so eta_x = 1, eta_y = (-1)^x, eta_z = (-1)^(x+y), eta_t = (-1)^(x+y+z). They depend only on
// the parity of partial coordinate sums, so local coordinates give the same signs (local
// extents are even, hence so are rank offsets).
//
// Host (lexicographic) layouts, complex double:
//   site     = ((t * Z + z) * Y + y) * X + x
//   spinor   [site][spin][color]            (re, im fastest; staggered: one spin)
//   gauge    [site][mu][row][col]           U_mu(x)_{row,col}
#pragma once

#include <array>
#include <cstddef>

namespace latke {

inline constexpr int n_dim = 4;
inline constexpr int n_color = 3;
inline constexpr int n_spin = 4;

/// A complex number with integer parts: entries of gamma and sigma matrices.
struct UnitComplex {
  int re, im;
};

constexpr UnitComplex operator*(UnitComplex a, UnitComplex b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
constexpr UnitComplex operator+(UnitComplex a, UnitComplex b) { return {a.re + b.re, a.im + b.im}; }
constexpr UnitComplex operator-(UnitComplex a, UnitComplex b) { return {a.re - b.re, a.im - b.im}; }

using SpinMatrix = std::array<std::array<UnitComplex, 4>, 4>;

/// gamma_{mu+1} in the DeGrand-Rossi basis, mu = 0..3 (x, y, z, t).
constexpr SpinMatrix gamma_matrix(int mu) {
  constexpr UnitComplex o{0, 0}, p{1, 0}, m{-1, 0}, i{0, 1}, mi{0, -1};
  switch (mu) {
    case 0: return {{{o, o, o, i}, {o, o, i, o}, {o, mi, o, o}, {mi, o, o, o}}};
    case 1: return {{{o, o, o, m}, {o, o, p, o}, {o, p, o, o}, {m, o, o, o}}};
    case 2: return {{{o, o, i, o}, {o, o, o, mi}, {mi, o, o, o}, {o, i, o, o}}};
    default: return {{{o, o, p, o}, {o, o, o, p}, {p, o, o, o}, {o, p, o, o}}};
  }
}

/// gamma_5 = diag(1, 1, -1, -1).
constexpr SpinMatrix gamma5_matrix() {
  constexpr UnitComplex o{0, 0}, p{1, 0}, m{-1, 0};
  return {{{p, o, o, o}, {o, p, o, o}, {o, o, m, o}, {o, o, o, m}}};
}

constexpr int gamma5_sign(int spin) { return spin < 2 ? 1 : -1; }

/// The upper-right 2x2 block s_mu of gamma_mu = [[0, s_mu], [s_mu^dagger, 0]]: the chiral
/// basis makes (1 +- gamma_mu) psi = [h, +-s_mu^dagger h] with h = psi_upper +- s_mu psi_lower.
constexpr UnitComplex gamma_block(int mu, int row, int col) { return gamma_matrix(mu)[row][col + 2]; }

/// sigma_{mu nu} = (i/2)[gamma_mu, gamma_nu] (entries are 0, +-1, +-i in this basis).
constexpr SpinMatrix sigma_matrix(int mu, int nu) {
  SpinMatrix s{};
  const SpinMatrix a = gamma_matrix(mu), b = gamma_matrix(nu);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      UnitComplex ab{0, 0}, ba{0, 0};
      for (int k = 0; k < 4; ++k) {
        ab = ab + a[r][k] * b[k][c];
        ba = ba + b[r][k] * a[k][c];
      }
      const UnitComplex comm = ab - ba;  // even entries: (i/2)*comm stays integral
      s[r][c] = UnitComplex{0, 1} * UnitComplex{comm.re / 2, comm.im / 2};
    }
  return s;
}

/// Default boundary conditions: periodic in space, antiperiodic in time.
inline constexpr std::array<double, 4> default_boundary_sign = {1.0, 1.0, 1.0, -1.0};

/// Staggered phase eta_mu(x) = (-1)^(x_0 + ... + x_{mu-1}) as +1 or -1; x is anything
/// indexable by 0..2 (std::array, int[4]).
template <typename C>
constexpr int staggered_phase(int mu, const C& x) {
  int sum = 0;
  for (int nu = 0; nu < mu; ++nu) sum += x[nu];
  return (sum & 1) ? -1 : 1;
}

/// Lexicographic site index of (x, y, z, t) in a lattice of extents dims.
constexpr std::size_t lex_site(const std::array<int, 4>& c, const std::array<int, 4>& dims) {
  return ((static_cast<std::size_t>(c[3]) * dims[2] + c[2]) * dims[1] + c[1]) * dims[0] + c[0];
}

/// Offset of (site, spin, color) in a lexicographic host spinor (in complex numbers).
constexpr std::size_t lex_spinor_index(std::size_t site, int spin, int color, int ns = n_spin,
                                       int nc = n_color) {
  return (site * ns + spin) * nc + color;
}

/// Offset of U_mu(site)_{row,col} in a lexicographic host gauge field (in complex numbers).
constexpr std::size_t lex_gauge_index(std::size_t site, int mu, int row, int col) {
  return ((site * n_dim + mu) * n_color + row) * n_color + col;
}

}  // namespace latke
