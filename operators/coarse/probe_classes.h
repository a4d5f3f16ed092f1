// The ten classes of coarse sites (aggregates) that the Galerkin assembly probes with
// (galerkin.h), as kernels test them: class t < 2 is the sites of checkerboard parity t;
// class 2 + 2 mu + q the sites whose coordinate mu has parity q. Local and global parities
// agree because every rank's coarse origin has even coordinates.
#pragma once

#include "src/core/macros.h"

namespace latke::mg {

inline constexpr int n_probe_classes = 10;
/// Not a class: every aggregate (the Galerkin product of coarse levels, which splits the
/// operator instead of masking its input).
inline constexpr int probe_all = -1;

LATKE_HOST_DEVICE LATKE_INLINE bool in_probe_class(const int (&c)[4], int parity, int cls) {
  if (cls == probe_all) return true;
  if (cls < 2) return parity == cls;
  const int mu = (cls - 2) >> 1, q = (cls - 2) & 1;
  return (c[mu] & 1) == q;
}

}  // namespace latke::mg
