// The 3x3 matrix functions of link smearing (host and device code), all gauge covariant:
// f(g X h^dag) = g f(X) h^dag for g, h in SU(3).
//   project_su3     the SU(3) matrix nearest X: the unitary factor V = X (X^dag X)^(-1/2) of
//                   X's polar decomposition, by Newton's iteration V <- (V + V^-dag) / 2
//                   (quadratic convergence; X must be invertible), times det(V)^(-1/3)
//   exp_i_hermitian exp(i Q) of a traceless Hermitian Q: Taylor series of exp(i Q / 2^s),
//                   with s such that |Q| / 2^s < 1/2, then squared s times
// (The staples come from staples.h, shared with the generator.)
#pragma once

#include <cmath>

#include "src/fields/su3_update.h"

namespace latke::gauge {

/// (a^-1)^dag = cofactor matrix / conj(det a).
LATKE_HOST_DEVICE LATKE_INLINE M3 inverse_adjoint(const M3& a) {
  M3 c;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
    c.e[i][j] = conj(a.e[i1][j1] * a.e[i2][j2] - a.e[i1][j2] * a.e[i2][j1]);
  }
  const Complex<double> d = det3(a);
  const double n = d.re * d.re + d.im * d.im;
  const Complex<double> s(d.re / n, d.im / n);  // 1 / conj(d)
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) c.e[i][j] = c.e[i][j] * s;
  return c;
}

LATKE_HOST_DEVICE LATKE_INLINE double max_abs_diff(const M3& a, const M3& b) {
  double m = 0;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    m = fmax(m, fabs(a.e[i][j].re - b.e[i][j].re));
    m = fmax(m, fabs(a.e[i][j].im - b.e[i][j].im));
  }
  return m;
}

/// The SU(3) matrix nearest x (see above); x is scaled first so that its entries are O(1).
LATKE_HOST_DEVICE LATKE_INLINE M3 project_su3(const M3& x) {
  double scale = 0;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) scale =
      fmax(scale, fabs(x.e[i][j].re) + fabs(x.e[i][j].im));
  M3 v = x;
  if (scale > 0)
    LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) v.e[i][j] =
        v.e[i][j] * (1.0 / scale);
  for (int it = 0; it < 40; ++it) {
    const M3 w = inverse_adjoint(v);
    M3 n;
    LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) n.e[i][j] =
        0.5 * (v.e[i][j] + w.e[i][j]);
    const double change = max_abs_diff(n, v);
    v = n;
    if (change < 1e-15) break;
  }
  const Complex<double> d = det3(v);
  const double phi = -atan2(d.im, d.re) / 3;
  const Complex<double> r(cos(phi), sin(phi));
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) v.e[i][j] = v.e[i][j] * r;
  return v;
}

/// exp(i q) for a traceless Hermitian q (see above).
LATKE_HOST_DEVICE LATKE_INLINE M3 exp_i_hermitian(const M3& q) {
  double norm = 0;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) norm +=
      q.e[i][j].re * q.e[i][j].re + q.e[i][j].im * q.e[i][j].im;
  norm = sqrt(norm);
  int s = 0;
  double f = 1;
  while (norm * f > 0.5 && s < 60) {
    f *= 0.5;
    ++s;
  }
  M3 a;  // i q / 2^s
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) a.e[i][j] =
      Complex<double>(-q.e[i][j].im * f, q.e[i][j].re * f);
  M3 r, term;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    r.e[i][j] = Complex<double>(i == j ? 1.0 : 0.0, 0.0);
    term.e[i][j] = r.e[i][j];
  }
  for (int k = 1; k <= 18; ++k) {  // |a| < 1/2: the remainder after 18 terms is below 1e-22
    term = term * a;
    LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
      term.e[i][j] = term.e[i][j] * (1.0 / k);
      r.e[i][j] += term.e[i][j];
    }
  }
  for (int k = 0; k < s; ++k) r = r * r;
  return r;
}

}  // namespace latke::gauge
