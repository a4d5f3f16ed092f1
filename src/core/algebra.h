// Register-level objects that kernels compute with: color matrices and color-spinors of any
// spin and color count, in the compute precision T. Sizes are compile-time so every loop
// unrolls and every array lives in registers.
#pragma once

#include <utility>

#include "src/core/complex.h"

namespace latke {

template <typename T, int N>
struct ColorMatrix {
  Complex<T> e[N][N];

  LATKE_HOST_DEVICE Complex<T>& operator()(int i, int j) { return e[i][j]; }
  LATKE_HOST_DEVICE const Complex<T>& operator()(int i, int j) const { return e[i][j]; }
};

template <typename T, int Nc, int Ns>
struct ColorSpinor {
  Complex<T> d[Ns][Nc];

  LATKE_HOST_DEVICE LATKE_INLINE void zero() {
    LATKE_UNROLL for (int s = 0; s < Ns; ++s)
      LATKE_UNROLL for (int c = 0; c < Nc; ++c) d[s][c] = Complex<T>(0, 0);
  }
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor& operator+=(const ColorSpinor& o) {
    LATKE_UNROLL for (int s = 0; s < Ns; ++s)
      LATKE_UNROLL for (int c = 0; c < Nc; ++c) d[s][c] += o.d[s][c];
    return *this;
  }
};

/// a * x + y, element-wise.
template <typename T, int Nc, int Ns>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, Nc, Ns> axpy(T a, const ColorSpinor<T, Nc, Ns>& x,
                                                           const ColorSpinor<T, Nc, Ns>& y) {
  ColorSpinor<T, Nc, Ns> r;
  LATKE_UNROLL for (int s = 0; s < Ns; ++s) LATKE_UNROLL for (int c = 0; c < Nc; ++c) {
    r.d[s][c].re = a * x.d[s][c].re + y.d[s][c].re;
    r.d[s][c].im = a * x.d[s][c].im + y.d[s][c].im;
  }
  return r;
}

/// U * v for each spin component of v.
template <typename T, int Nc, int Ns>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, Nc, Ns> operator*(const ColorMatrix<T, Nc>& u,
                                                                const ColorSpinor<T, Nc, Ns>& v) {
  ColorSpinor<T, Nc, Ns> r;
  LATKE_UNROLL for (int s = 0; s < Ns; ++s) LATKE_UNROLL for (int i = 0; i < Nc; ++i) {
    Complex<T> a = u.e[i][0] * v.d[s][0];
    LATKE_UNROLL for (int j = 1; j < Nc; ++j) a = mac(a, u.e[i][j], v.d[s][j]);
    r.d[s][i] = a;
  }
  return r;
}

/// U^dagger * v for each spin component of v.
template <typename T, int Nc, int Ns>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, Nc, Ns> adj_mul(const ColorMatrix<T, Nc>& u,
                                                              const ColorSpinor<T, Nc, Ns>& v) {
  ColorSpinor<T, Nc, Ns> r;
  LATKE_UNROLL for (int s = 0; s < Ns; ++s) LATKE_UNROLL for (int i = 0; i < Nc; ++i) {
    Complex<T> a = conj_mul(u.e[0][i], v.d[s][0]);
    LATKE_UNROLL for (int j = 1; j < Nc; ++j) a = conj_mac(a, u.e[j][i], v.d[s][j]);
    r.d[s][i] = a;
  }
  return r;
}

/// a b. Its rounding is that of `s += a * b` on purpose: the gauge generator's staples are
/// these products, and a seed must give the same configuration from one version to the next
/// (a cached configuration and a fresh one are the same chain).
template <typename T, int N>
LATKE_HOST_DEVICE LATKE_INLINE ColorMatrix<T, N> operator*(const ColorMatrix<T, N>& a,
                                                           const ColorMatrix<T, N>& b) {
  ColorMatrix<T, N> r;
  LATKE_UNROLL for (int i = 0; i < N; ++i) LATKE_UNROLL for (int j = 0; j < N; ++j) {
    Complex<T> s = a.e[i][0] * b.e[0][j];
    LATKE_UNROLL for (int k = 1; k < N; ++k) s += a.e[i][k] * b.e[k][j];
    r.e[i][j] = s;
  }
  return r;
}

template <typename T, int N>
LATKE_HOST_DEVICE LATKE_INLINE ColorMatrix<T, N> adjoint(const ColorMatrix<T, N>& a) {
  ColorMatrix<T, N> r;
  LATKE_UNROLL for (int i = 0; i < N; ++i)
    LATKE_UNROLL for (int j = 0; j < N; ++j) r.e[i][j] = conj(a.e[j][i]);
  return r;
}

/// Compile-time loop: f(std::integral_constant<int, I>{}) for I = 0..N-1.
template <int N, typename F, int... I>
LATKE_HOST_DEVICE LATKE_INLINE void static_for_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, typename F>
LATKE_HOST_DEVICE LATKE_INLINE void static_for(F&& f) {
  static_for_impl<N>(f, std::make_integer_sequence<int, N>{});
}

}  // namespace latke
