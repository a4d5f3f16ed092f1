// Checkerboard index arithmetic for kernels (host and device). See lattice.h for the rule.
#pragma once

#include "src/core/lattice.h"
#include "src/core/macros.h"

namespace latke {

/// The local extents as kernels see them (trivially copyable).
struct LocalGeometry {
  int L[4];
  int volume_cb;

  static LocalGeometry of(const Lattice& lat) {
    LocalGeometry g;
    for (int mu = 0; mu < 4; ++mu) g.L[mu] = lat.local()[mu];
    g.volume_cb = lat.volume_cb();
    return g;
  }

  /// Coordinates of (x_cb, parity); returns the lexicographic local index.
  LATKE_HOST_DEVICE LATKE_INLINE int coords(int x_cb, int parity, int (&c)[4]) const {
    const int hx = L[0] >> 1;
    int r = x_cb / hx;
    const int xh = x_cb - r * hx;
    c[1] = r % L[1];
    r /= L[1];
    c[2] = r % L[2];
    c[3] = r / L[2];
    c[0] = 2 * xh + ((c[1] + c[2] + c[3] + parity) & 1);
    return 2 * x_cb + (c[0] & 1);
  }

  LATKE_HOST_DEVICE LATKE_INLINE int full_index(const int (&c)[4]) const {
    return ((c[3] * L[2] + c[2]) * L[1] + c[1]) * L[0] + c[0];
  }

  /// Coordinates of lexicographic local index lex (x fastest; full_index's inverse); returns the
  /// site's parity. Its checkerboard index is lex >> 1.
  LATKE_HOST_DEVICE LATKE_INLINE int lex_coords(int lex, int (&c)[4]) const {
    c[0] = lex % L[0];
    lex /= L[0];
    c[1] = lex % L[1];
    lex /= L[1];
    c[2] = lex % L[2];
    c[3] = lex / L[2];
    return (c[0] + c[1] + c[2] + c[3]) & 1;
  }
};

}  // namespace latke
