// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a counter-based generator. Four 32-bit words are a pure function of a
// 128-bit counter and a 64-bit key, so any thread can draw the numbers of any (site, link,
// sweep, ...) without a stored state, and a draw never depends on which rank or thread makes
// it. Host and device code; checked against the published known-answer vectors.
#pragma once

#include <cstdint>

#include "src/core/macros.h"

namespace latke {

struct Philox4x32 {
  std::uint32_t v[4];
};

/// @brief The ten-round Philox4x32 bijection of counter ctr under key (k0, k1).
LATKE_HOST_DEVICE inline Philox4x32 philox4x32_10(Philox4x32 ctr, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  LATKE_UNROLL for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(m0) * ctr.v[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(m1) * ctr.v[2];
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    ctr.v[0] = hi1 ^ ctr.v[1] ^ k0;
    ctr.v[1] = lo1;
    ctr.v[2] = hi0 ^ ctr.v[3] ^ k1;
    ctr.v[3] = lo0;
    k0 += w0;
    k1 += w1;
  }
  return ctr;
}

/// A uniform in the open interval (0, 1) from a 32-bit word (resolution 2^-32).
LATKE_HOST_DEVICE LATKE_INLINE double uniform_open(std::uint32_t w) { return (w + 0.5) * 2.3283064365386963e-10; }

/// A stream of draws for one purpose: a 64-bit key and the first three counter words fixed,
/// the fourth word counting draws. Each draw gives four uniforms in (0, 1).
struct CounterRng {
  std::uint32_t key[2];
  std::uint32_t ctr[3];

  LATKE_HOST_DEVICE LATKE_INLINE void draw(std::uint32_t n, double (&u)[4]) const {
    const Philox4x32 r = philox4x32_10(Philox4x32{{ctr[0], ctr[1], ctr[2], n}}, key[0], key[1]);
    LATKE_UNROLL for (int i = 0; i < 4; ++i) u[i] = uniform_open(r.v[i]);
  }
};

}  // namespace latke
