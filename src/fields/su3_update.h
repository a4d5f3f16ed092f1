// Updates of one SU(3) link in a heat bath of its staples, for the quenched generator (host
// and device code). For the Wilson action S = beta sum_P (1 - Re tr U_P / 3) the part of S
// that depends on a link U is -(beta/3) Re tr(U A), with A the sum of its six staples.
//
// Cabibbo-Marinari: U is updated by left multiplication with SU(2) matrices embedded in the
// three subgroups (rows/columns {0,1}, {1,2}, {0,2}). For one subgroup let w be the 2x2 block
// of W = U A in those rows and columns. For R in SU(2), Re tr(R w) = Re tr(R k V), where
// k V (k >= 0, V in SU(2)) is the quaternion part of w:
//   k V = [[a0 + i a3, a2 + i a1], [-a2 + i a1, a0 - i a3]],
//   a0 = Re(w00 + w11)/2, a1 = Im(w01 + w10)/2, a2 = Re(w01 - w10)/2, a3 = Im(w00 - w11)/2.
// So X = R V is distributed as exp(alpha x0) dHaar(X) with alpha = 2 beta k / 3, i.e. x0 with
// density sqrt(1 - x0^2) exp(alpha x0) on [-1, 1] and (x1, x2, x3) uniform on the sphere of
// radius sqrt(1 - x0^2); then R = X V^dag.
//   heat bath:        x0 by Creutz's method (alpha < 1.7) or Kennedy-Pendleton's (larger
//                     alpha): each accepts more than 2/3 of its tries in its range
//   over-relaxation:  R = (V^dag)^2, so that R V = V^dag and Re tr(R w) = Re tr(w): the
//                     action does not change, and the map is its own inverse.
// After its three subgroup steps the link is projected back onto SU(3) (Gram-Schmidt on the
// first two rows, third row = conj(row0 x row1)), which keeps rounding from accumulating.
#pragma once

#include <cmath>
#include <cstdint>

#include "src/core/algebra.h"
#include "src/fields/philox.h"

namespace latke::gauge {

using M3 = ColorMatrix<double, 3>;

/// The three SU(2) subgroups of SU(3), as (row, column) index pairs.
LATKE_HOST_DEVICE LATKE_INLINE void subgroup(int s, int& i, int& j) {
  i = s == 1 ? 1 : 0;
  j = s == 0 ? 1 : 2;
}

/// A 2x2 complex matrix [[a, b], [c, d]].
struct M2 {
  Complex<double> a, b, c, d;
};

LATKE_HOST_DEVICE LATKE_INLINE M2 mul(const M2& x, const M2& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
LATKE_HOST_DEVICE LATKE_INLINE M2 dagger(const M2& x) { return {conj(x.a), conj(x.c), conj(x.b), conj(x.d)}; }
/// The SU(2) matrix of a unit quaternion (q0, q1, q2, q3).
LATKE_HOST_DEVICE LATKE_INLINE M2 su2(double q0, double q1, double q2, double q3) {
  return {Complex<double>(q0, q3), Complex<double>(q2, q1), Complex<double>(-q2, q1), Complex<double>(q0, -q3)};
}

/// a b^dag
LATKE_HOST_DEVICE LATKE_INLINE M3 mul_adj(const M3& a, const M3& b) {
  M3 r;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    Complex<double> s = conj_mul(b.e[j][0], a.e[i][0]);
    LATKE_UNROLL for (int k = 1; k < 3; ++k) s += conj_mul(b.e[j][k], a.e[i][k]);
    r.e[i][j] = s;
  }
  return r;
}

/// a^dag b
LATKE_HOST_DEVICE LATKE_INLINE M3 adj_mul(const M3& a, const M3& b) {
  M3 r;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    Complex<double> s = conj_mul(a.e[0][i], b.e[0][j]);
    LATKE_UNROLL for (int k = 1; k < 3; ++k) s += conj_mul(a.e[k][i], b.e[k][j]);
    r.e[i][j] = s;
  }
  return r;
}

/// Re tr(a b^dag)
LATKE_HOST_DEVICE LATKE_INLINE double re_tr_mul_adj(const M3& a, const M3& b) {
  double s = 0;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    s += a.e[i][j].re * b.e[i][j].re + a.e[i][j].im * b.e[i][j].im;
  }
  return s;
}

/// Quaternion part (k, V) of the (i, j) block of W; false when k vanishes (any R will do).
LATKE_HOST_DEVICE LATKE_INLINE bool project_su2(const M3& w, int i, int j, double& k, M2& v) {
  const double a0 = 0.5 * (w.e[i][i].re + w.e[j][j].re);
  const double a1 = 0.5 * (w.e[i][j].im + w.e[j][i].im);
  const double a2 = 0.5 * (w.e[i][j].re - w.e[j][i].re);
  const double a3 = 0.5 * (w.e[i][i].im - w.e[j][j].im);
  k = sqrt(a0 * a0 + a1 * a1 + a2 * a2 + a3 * a3);
  if (!(k > 1e-300)) return false;
  const double s = 1.0 / k;
  v = su2(a0 * s, a1 * s, a2 * s, a3 * s);
  return true;
}

/// Rows i and j of m become R times them (m -> R~ m with R embedded in rows i, j).
LATKE_HOST_DEVICE LATKE_INLINE void rotate_rows(M3& m, int i, int j, const M2& r) {
  LATKE_UNROLL for (int c = 0; c < 3; ++c) {
    const Complex<double> x = m.e[i][c], y = m.e[j][c];
    m.e[i][c] = r.a * x + r.b * y;
    m.e[j][c] = r.c * x + r.d * y;
  }
}

/// Project onto SU(3): orthonormalize rows 0 and 1, row 2 = conj(row0 x row1).
LATKE_HOST_DEVICE LATKE_INLINE void reunitarize(M3& u) {
  double n = 0;
  LATKE_UNROLL for (int c = 0; c < 3; ++c) n += norm2(u.e[0][c]);
  n = 1.0 / sqrt(n);
  LATKE_UNROLL for (int c = 0; c < 3; ++c) u.e[0][c] = n * u.e[0][c];
  Complex<double> p;
  LATKE_UNROLL for (int c = 0; c < 3; ++c) p += conj_mul(u.e[0][c], u.e[1][c]);
  LATKE_UNROLL for (int c = 0; c < 3; ++c) u.e[1][c] -= p * u.e[0][c];
  n = 0;
  LATKE_UNROLL for (int c = 0; c < 3; ++c) n += norm2(u.e[1][c]);
  n = 1.0 / sqrt(n);
  LATKE_UNROLL for (int c = 0; c < 3; ++c) u.e[1][c] = n * u.e[1][c];
  u.e[2][0] = conj(u.e[0][1] * u.e[1][2] - u.e[0][2] * u.e[1][1]);
  u.e[2][1] = conj(u.e[0][2] * u.e[1][0] - u.e[0][0] * u.e[1][2]);
  u.e[2][2] = conj(u.e[0][0] * u.e[1][1] - u.e[0][1] * u.e[1][0]);
}

/// The larger of two deviations, where NaN (a link that is not finite) counts as infinite,
/// so that a NaN link never reads as unitary.
LATKE_HOST_DEVICE LATKE_INLINE double worse(double worst, double d) {
  return d <= worst ? worst : (d == d ? d : HUGE_VAL);
}

LATKE_HOST_DEVICE LATKE_INLINE Complex<double> det3(const M3& u) {
  return u.e[0][0] * (u.e[1][1] * u.e[2][2] - u.e[1][2] * u.e[2][1]) -
         u.e[0][1] * (u.e[1][0] * u.e[2][2] - u.e[1][2] * u.e[2][0]) +
         u.e[0][2] * (u.e[1][0] * u.e[2][1] - u.e[1][1] * u.e[2][0]);
}

/// Largest |U U^dag - 1| entry and |det U - 1|; infinite for a link that is not finite.
LATKE_HOST_DEVICE LATKE_INLINE double unitarity_deviation(const M3& u) {
  double worst = 0;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    Complex<double> s;
    LATKE_UNROLL for (int k = 0; k < 3; ++k) s += u.e[i][k] * conj(u.e[j][k]);
    if (i == j) s.re -= 1.0;
    worst = worse(worst, sqrt(norm2(s)));
  }
  return worse(worst, sqrt(norm2(det3(u) - Complex<double>(1.0))));
}

/// Tries before a heat-bath draw gives up and leaves the subgroup unchanged. With an
/// acceptance above 2/3 per try, giving up has probability below 1e-40.
inline constexpr int heatbath_max_tries = 96;
/// Below this alpha Creutz's method accepts more often than Kennedy-Pendleton's.
inline constexpr double heatbath_alpha_switch = 1.7;

/// @brief x0 with density sqrt(1 - x0^2) exp(alpha x0) on [-1, 1], from the draws of rng
/// numbered first, first + 1, ...; false when every try was rejected.
LATKE_HOST_DEVICE LATKE_INLINE bool su2_heatbath_x0(double alpha, const CounterRng& rng, std::uint32_t first,
                                                    double& x0) {
  for (int t = 0; t < heatbath_max_tries; ++t) {
    double u[4];
    rng.draw(first + t, u);
    if (alpha < heatbath_alpha_switch) {
      // Creutz: x0 from exp(alpha x0) by inversion, accepted with probability sqrt(1 - x0^2).
      const double x = alpha > 1e-8 ? 1.0 + log(u[0] + (1.0 - u[0]) * exp(-2.0 * alpha)) / alpha : 2.0 * u[0] - 1.0;
      if (u[1] * u[1] <= 1.0 - x * x) {
        x0 = x;
        return true;
      }
    } else {
      // Kennedy-Pendleton: lambda^2 = (1 - x0)/2 from lambda^2 exp(-2 alpha lambda^2),
      // accepted with probability sqrt(1 - lambda^2).
      const double c = cos(6.283185307179586 * u[1]);
      const double l2 = -(log(u[0]) + c * c * log(u[2])) / (2.0 * alpha);
      if (u[3] * u[3] <= 1.0 - l2) {
        x0 = 1.0 - 2.0 * l2;
        return true;
      }
    }
  }
  return false;
}

/// @brief A heat-bath SU(2) matrix X: x0 as above, (x1, x2, x3) uniform on the sphere. The
/// direction uses draw number `dir_draw`, the x0 tries draws `first`, `first + 1`, ...
LATKE_HOST_DEVICE LATKE_INLINE bool su2_heatbath(double alpha, const CounterRng& rng, std::uint32_t first,
                                                 std::uint32_t dir_draw, M2& x) {
  double x0;
  if (!su2_heatbath_x0(alpha, rng, first, x0)) return false;
  double u[4];
  rng.draw(dir_draw, u);
  const double r = sqrt(fmax(0.0, 1.0 - x0 * x0));
  const double cos_t = 2.0 * u[0] - 1.0;
  const double sin_t = sqrt(fmax(0.0, 1.0 - cos_t * cos_t));
  const double phi = 6.283185307179586 * u[1];
  x = su2(x0, r * sin_t * cos(phi), r * sin_t * sin(phi), r * cos_t);
  return true;
}

/// Draw numbering within one subgroup step: tries count up from 0, the direction is 127.
inline constexpr std::uint32_t draw_direction = 127;
/// Bits of the fourth counter word: [subgroup 2 bits][draw 7 bits].
LATKE_HOST_DEVICE LATKE_INLINE std::uint32_t draw_base(int sub) { return static_cast<std::uint32_t>(sub) << 7; }

/// @brief One Cabibbo-Marinari heat-bath update of u with staple sum a at coupling beta;
/// rng identifies (seed, sweep, site, direction). Reunitarizes at the end.
LATKE_HOST_DEVICE LATKE_INLINE void heatbath_link(M3& u, const M3& a, double beta, const CounterRng& rng) {
  M3 w = u * a;
  // Unrolled, so that the subgroup's rows are compile-time indices (registers, not local memory).
  LATKE_UNROLL for (int s = 0; s < 3; ++s) {
    int i, j;
    subgroup(s, i, j);
    double k;
    M2 v, x;
    if (!project_su2(w, i, j, k, v)) {
      v = su2(1, 0, 0, 0);  // no preferred direction: X is Haar-distributed
      k = 0;
    }
    if (!su2_heatbath(2.0 * beta * k / 3.0, rng, draw_base(s), draw_base(s) + draw_direction, x)) continue;
    const M2 r = mul(x, dagger(v));
    rotate_rows(u, i, j, r);
    rotate_rows(w, i, j, r);
  }
  reunitarize(u);
}

/// @brief One over-relaxation step of u with staple sum a: Re tr(u a) is unchanged.
LATKE_HOST_DEVICE LATKE_INLINE void overrelax_link(M3& u, const M3& a) {
  M3 w = u * a;
  LATKE_UNROLL for (int s = 0; s < 3; ++s) {
    int i, j;
    subgroup(s, i, j);
    double k;
    M2 v;
    if (!project_su2(w, i, j, k, v)) continue;
    const M2 vd = dagger(v);
    const M2 r = mul(vd, vd);
    rotate_rows(u, i, j, r);
    rotate_rows(w, i, j, r);
  }
  reunitarize(u);
}

}  // namespace latke::gauge
