// A complex number usable in host and device code with the same semantics everywhere
// (std::complex is not device code; cuda::std::complex is not host-portable to g++).
#pragma once

#include "src/core/macros.h"

namespace latke {

template <typename T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;

  LATKE_HOST_DEVICE constexpr Complex() : re(0), im(0) {}
  LATKE_HOST_DEVICE constexpr Complex(T r, T i = 0) : re(r), im(i) {}
  template <typename U>
  LATKE_HOST_DEVICE constexpr explicit Complex(const Complex<U>& o)
      : re(static_cast<T>(o.re)), im(static_cast<T>(o.im)) {}

  LATKE_HOST_DEVICE Complex& operator+=(const Complex& o) { re += o.re; im += o.im; return *this; }
  LATKE_HOST_DEVICE Complex& operator-=(const Complex& o) { re -= o.re; im -= o.im; return *this; }
  LATKE_HOST_DEVICE Complex& operator*=(T s) { re *= s; im *= s; return *this; }
};

template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator+(Complex<T> a, Complex<T> b) { return {a.re + b.re, a.im + b.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator-(Complex<T> a, Complex<T> b) { return {a.re - b.re, a.im - b.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator-(Complex<T> a) { return {-a.re, -a.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator*(Complex<T> a, Complex<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator*(T s, Complex<T> a) { return {s * a.re, s * a.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator*(Complex<T> a, T s) { return {s * a.re, s * a.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> conj(Complex<T> a) { return {a.re, -a.im}; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE T norm2(Complex<T> a) { return a.re * a.re + a.im * a.im; }
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator/(Complex<T> a, Complex<T> b) {
  const T n = T(1) / norm2(b);
  return {(a.re * b.re + a.im * b.im) * n, (a.im * b.re - a.re * b.im) * n};
}
/// acc + a * b as four multiply-adds, which the compiler fuses (one FMA each on the GPU);
/// `acc += a * b` rounds the product first and spends an extra add per part.
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> mac(Complex<T> acc, Complex<T> a, Complex<T> b) {
  acc.re += a.re * b.re;
  acc.re -= a.im * b.im;
  acc.im += a.re * b.im;
  acc.im += a.im * b.re;
  return acc;
}
/// i * a
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> times_i(Complex<T> a) { return {-a.im, a.re}; }
/// conj(a) * b
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> conj_mul(Complex<T> a, Complex<T> b) {
  return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re};
}
/// acc + conj(a) * b as four multiply-adds (see mac).
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> conj_mac(Complex<T> acc, Complex<T> a, Complex<T> b) {
  acc.re += a.re * b.re;
  acc.re += a.im * b.im;
  acc.im += a.re * b.im;
  acc.im -= a.im * b.re;
  return acc;
}

}  // namespace latke
