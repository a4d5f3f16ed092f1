// Two IEEE half-precision reals computed together, one source for CUDA and the CPU: on the
// device a __half2, whose add, multiply and fused multiply-add are one instruction for both
// lanes (HADD2, HMUL2, HFMA2: twice the results per instruction of FP32 arithmetic); on the
// host two floats, each result rounded to the nearest half as the device rounds it, with half's
// range (overflow to infinity, gradual underflow below 2^-14), so that a kernel's CPU run shows
// what half arithmetic does to it. A kernel holds two fields (or two sites) in the two lanes.
//
// Half has 11 significant bits and a largest finite value of 65504: callers scale their data
// to order one first (the pair kernels divide each field by the square root of its summed site
// norms squared, which no component exceeds).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "src/core/macros.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace latke {

/// x rounded to the nearest IEEE half (ties to even), returned as a float: infinity past
/// 65520, multiples of 2^-24 below 2^-14.
inline float round_to_half(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t sign = u & 0x80000000u, mag = u ^ sign;
  float r;
  if (mag >= 0x7f800000u) {  // infinity or NaN stays
    r = x;
    return r;
  }
  if (mag >= 0x477ff000u) {  // 65520 and above round past 65504
    const std::uint32_t inf = sign | 0x7f800000u;
    std::memcpy(&r, &inf, sizeof r);
    return r;
  }
  if (mag < 0x38800000u) {  // below 2^-14: half's subnormals, spaced 2^-24
    float a;
    std::memcpy(&a, &mag, sizeof a);
    const float q = std::nearbyint(a * 16777216.0f) * (1.0f / 16777216.0f);
    return sign ? -q : q;
  }
  const std::uint32_t lsb = (mag >> 13) & 1u;  // keep 10 of float's 23 mantissa bits
  const std::uint32_t v = ((mag + 0xfffu + lsb) & ~0x1fffu) | sign;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

/// The IEEE half bits of x, which must already be a half value (round_to_half's result).
inline std::uint16_t half_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag < 0x38800000u) {  // subnormal: a multiple of 2^-24
    float a;
    std::memcpy(&a, &mag, sizeof a);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(a * 16777216.0f));
  }
  return static_cast<std::uint16_t>(sign | (((mag >> 23) - 112u) << 10) | ((mag >> 13) & 0x3ffu));
}

/// The value of the IEEE half with bits h.
inline float half_value(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  std::uint32_t u;
  if (e == 0) {
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);
    std::memcpy(&u, &v, sizeof u);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112u) << 23) | (m << 13);
  }
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

struct Half2 {
#if defined(__CUDA_ARCH__)
  __half2 v;
  LATKE_HOST_DEVICE LATKE_INLINE Half2() : v(__float2half2_rn(0.0f)) {}
  LATKE_HOST_DEVICE LATKE_INLINE Half2(float s) : v(__float2half2_rn(s)) {}  // NOLINT: both lanes s
  LATKE_HOST_DEVICE LATKE_INLINE static Half2 raw(__half2 h) {
    Half2 r;
    r.v = h;
    return r;
  }
  /// (a, b) in the two lanes
  LATKE_HOST_DEVICE LATKE_INLINE static Half2 pair(float a, float b) { return raw(__floats2half2_rn(a, b)); }
  LATKE_HOST_DEVICE LATKE_INLINE float lo() const { return __low2float(v); }
  LATKE_HOST_DEVICE LATKE_INLINE float hi() const { return __high2float(v); }
  /// From its storage: the low lane's IEEE bits in the low 16 bits of w, the high lane's above.
  LATKE_HOST_DEVICE LATKE_INLINE static Half2 from_bits(std::uint32_t w) {
    __half2 h;
    memcpy(&h, &w, sizeof h);
    return raw(h);
  }
  LATKE_HOST_DEVICE LATKE_INLINE std::uint32_t bits() const {
    std::uint32_t w;
    memcpy(&w, &v, sizeof w);
    return w;
  }
#else
  float l = 0, h = 0;
  LATKE_HOST_DEVICE LATKE_INLINE Half2() = default;
  LATKE_HOST_DEVICE LATKE_INLINE Half2(float s) : l(round_to_half(s)), h(l) {}  // NOLINT: both lanes s
  LATKE_HOST_DEVICE LATKE_INLINE static Half2 pair(float a, float b) {
    Half2 r;
    r.l = round_to_half(a);
    r.h = round_to_half(b);
    return r;
  }
  LATKE_HOST_DEVICE LATKE_INLINE float lo() const { return l; }
  LATKE_HOST_DEVICE LATKE_INLINE float hi() const { return h; }
  static Half2 from_bits(std::uint32_t w) {
    Half2 r;
    r.l = half_value(static_cast<std::uint16_t>(w & 0xffffu));
    r.h = half_value(static_cast<std::uint16_t>(w >> 16));
    return r;
  }
  std::uint32_t bits() const { return half_bits(l) | static_cast<std::uint32_t>(half_bits(h)) << 16; }
#endif
  LATKE_HOST_DEVICE LATKE_INLINE Half2& operator+=(Half2 o);
  LATKE_HOST_DEVICE LATKE_INLINE Half2& operator-=(Half2 o);
  LATKE_HOST_DEVICE LATKE_INLINE Half2& operator*=(Half2 o);
};

#if defined(__CUDA_ARCH__)
LATKE_HOST_DEVICE LATKE_INLINE Half2 operator+(Half2 a, Half2 b) { return Half2::raw(__hadd2(a.v, b.v)); }
LATKE_HOST_DEVICE LATKE_INLINE Half2 operator-(Half2 a, Half2 b) { return Half2::raw(__hsub2(a.v, b.v)); }
LATKE_HOST_DEVICE LATKE_INLINE Half2 operator*(Half2 a, Half2 b) { return Half2::raw(__hmul2(a.v, b.v)); }
LATKE_HOST_DEVICE LATKE_INLINE Half2 operator-(Half2 a) { return Half2::raw(__hneg2(a.v)); }
/// a b + c, rounded once
LATKE_HOST_DEVICE LATKE_INLINE Half2 fma(Half2 a, Half2 b, Half2 c) { return Half2::raw(__hfma2(a.v, b.v, c.v)); }
#else
inline Half2 operator+(Half2 a, Half2 b) { return Half2::pair(a.l + b.l, a.h + b.h); }
inline Half2 operator-(Half2 a, Half2 b) { return Half2::pair(a.l - b.l, a.h - b.h); }
inline Half2 operator*(Half2 a, Half2 b) { return Half2::pair(a.l * b.l, a.h * b.h); }
inline Half2 operator-(Half2 a) { return Half2::pair(-a.l, -a.h); }
/// a b + c, rounded once (the product of two halves is exact in float)
inline Half2 fma(Half2 a, Half2 b, Half2 c) { return Half2::pair(a.l * b.l + c.l, a.h * b.h + c.h); }
#endif

/// Four Half2 as stored (Half2::bits), one 16-byte load.
struct alignas(16) Half2x4 {
  std::uint32_t w[4];
};

LATKE_HOST_DEVICE LATKE_INLINE Half2& Half2::operator+=(Half2 o) { return *this = *this + o; }
LATKE_HOST_DEVICE LATKE_INLINE Half2& Half2::operator-=(Half2 o) { return *this = *this - o; }
LATKE_HOST_DEVICE LATKE_INLINE Half2& Half2::operator*=(Half2 o) { return *this = *this * o; }

}  // namespace latke
