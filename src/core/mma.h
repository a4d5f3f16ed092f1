// Warp-level matrix products on tensor cores, one source for CUDA and the CPU: the TF32
// m16n8k8 product D = A B + C (A 16x8, B 8x8, C and D 16x8 in FP32) that a warp computes
// together, each lane holding fragments of the matrices as PTX lays them out (lane = 4 g + t):
//   A: a[0] (row g, col t), a[1] (g + 8, t), a[2] (g, t + 4), a[3] (g + 8, t + 4);
//   B: b[0] (row t, col g), b[1] (t + 4, g);
//   C: c[0] (row g, col 2t), c[1] (g, 2t + 1), c[2] (g + 8, 2t), c[3] (g + 8, 2t + 1).
// On the device a thread holds its own lane (warp_lanes = 1) and mma() is one mma.sync; on the
// host one call holds all 32 lanes (warp_lanes = 32) and mma() computes the same product from
// them, with the operands cut to TF32 as the tensor cores read them. A kernel written over
// for_lanes() therefore runs on both backends; the host form is for tests, not for speed.
//
// TF32 keeps 10 bits of mantissa. split() writes x = hi + lo with hi in TF32 (rounded to
// nearest) and lo the rest, so that the three products hi hi + hi lo + lo hi recover nearly
// FP32's accuracy (relative error about 2^-21 per product) at three times the tensor work.
#pragma once

#include <cstdint>
#include <cstring>

#include "src/core/macros.h"

namespace latke::mma {

#ifdef __CUDA_ARCH__
#define LATKE_WARP_LANES 1
#else
#define LATKE_WARP_LANES 32
#endif

/// Lanes one thread holds: 1 on the device, 32 on the host.
template <int L>
struct FragA {
  float v[L][4];
};
template <int L>
struct FragB {
  float v[L][2];
};
template <int L>
struct FragC {
  float v[L][4];
};

/// The lane of slot l of a thread whose launch index is idx (threads of a warp are 32
/// consecutive indices, aligned).
LATKE_HOST_DEVICE LATKE_INLINE int lane_of(int l, int idx) {
#ifdef __CUDA_ARCH__
  (void)l;
  return idx & 31;
#else
  (void)idx;
  return l;
#endif
}

LATKE_HOST_DEVICE LATKE_INLINE std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

LATKE_HOST_DEVICE LATKE_INLINE float float_of(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// x rounded to TF32 (nearest, ties away from zero: cvt.rna.tf32.f32), as an FP32 value.
LATKE_HOST_DEVICE LATKE_INLINE float to_tf32(float x) {
#ifdef __CUDA_ARCH__
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#else
  return float_of((bits_of(x) + 0x1000u) & 0xffffe000u);
#endif
}

/// x = hi + lo with hi in TF32 (lo exact in FP32).
LATKE_HOST_DEVICE LATKE_INLINE void split(float x, float& hi, float& lo) {
  hi = to_tf32(x);
  lo = x - hi;
}

/// c += a b over the warp (see the header comment for the fragments).
template <int L>
LATKE_HOST_DEVICE LATKE_INLINE void mma(FragC<L>& c, const FragA<L>& a, const FragB<L>& b) {
#ifdef __CUDA_ARCH__
  static_assert(L == 1, "a device thread holds one lane");
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c.v[0][0]), "+f"(c.v[0][1]), "+f"(c.v[0][2]), "+f"(c.v[0][3])
      : "r"(__float_as_uint(a.v[0][0])), "r"(__float_as_uint(a.v[0][1])), "r"(__float_as_uint(a.v[0][2])),
        "r"(__float_as_uint(a.v[0][3])), "r"(__float_as_uint(b.v[0][0])), "r"(__float_as_uint(b.v[0][1])));
#else
  static_assert(L == 32, "the host holds a whole warp");
  auto tf32 = [](float x) { return float_of(bits_of(x) & 0xffffe000u); };  // the bits the tensor cores read
  float A[16][8], B[8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    A[g][t] = tf32(a.v[lane][0]);
    A[g + 8][t] = tf32(a.v[lane][1]);
    A[g][t + 4] = tf32(a.v[lane][2]);
    A[g + 8][t + 4] = tf32(a.v[lane][3]);
    B[t][g] = tf32(b.v[lane][0]);
    B[t + 4][g] = tf32(b.v[lane][1]);
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int r = 0; r < 4; ++r) {
      const int row = g + 8 * (r >> 1), col = 2 * t + (r & 1);
      float s = c.v[lane][r];
      for (int k = 0; k < 8; ++k) s += A[row][k] * B[k][col];
      c.v[lane][r] = s;
    }
  }
#endif
}

/// c += a b from split operands: three TF32 products, the small ones first.
template <int L>
LATKE_HOST_DEVICE LATKE_INLINE void mma3(FragC<L>& c, const FragA<L>& a_hi, const FragA<L>& a_lo, const FragB<L>& b_hi,
                                         const FragB<L>& b_lo) {
  mma(c, a_lo, b_hi);
  mma(c, a_hi, b_lo);
  mma(c, a_hi, b_hi);
}

}  // namespace latke::mma
