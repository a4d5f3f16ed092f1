// Faces of a rank's local volume for halo exchange, shared by the operators' kernels: which
// dimensions are split over ranks, how the sites of one parity on each face are enumerated
// (the packers' and the exterior kernels' thread index), and where a site sits within its
// face (the same on the sending and the receiving rank).
#pragma once

#include "src/core/indexing.h"
#include "src/core/lattice.h"
#include "src/core/macros.h"

namespace latke {

/// Which sites a hopping kernel launch covers when halos are exchanged.
/// interior/exterior: sites with no off-rank neighbour, then the others whole (every hop) once
/// the faces are in. interior_partial/exterior_partial: every site's hops that stay on the rank
/// (a boundary site's sum kept apart, FaceGeometry::slot), then only the boundary sites' hops
/// from the faces, added to that sum: the exterior pass reads one face hop per site instead of
/// eight hops, which its few threads cannot hide the latency of.
enum DslashMode : int { all_sites = 0, interior = 1, exterior = 2, interior_partial = 3, exterior_partial = 4 };

/// Index of a site's position on a slice of dimension MU (the other three coordinates,
/// checkerboarded): the same on the sending and the receiving rank.
template <int MU>
LATKE_HOST_DEVICE LATKE_INLINE int slice_index(const LocalGeometry& geom, const int (&c)[4]) {
  int idx = 0;
  LATKE_UNROLL for (int nu = 3; nu >= 0; --nu) if (nu != MU) idx = idx * geom.L[nu] + c[nu];
  return idx >> 1;
}

/// Coordinates of the site of the given parity with slice index f (slice_index) on slice
/// `slice` of dimension mu.
LATKE_HOST_DEVICE LATKE_INLINE void slice_site(const LocalGeometry& geom, int mu, int slice, int f, int parity,
                                               int (&c)[4]) {
  int o[3], k = 0;
  for (int nu = 0; nu < 4; ++nu)
    if (nu != mu) o[k++] = nu;
  const int la = geom.L[o[0]], lb = geom.L[o[1]];
  const int full3 = 2 * f;
  const int ca0 = full3 % la;
  const int r = full3 / la;
  c[o[1]] = r % lb;
  c[o[2]] = r / lb;
  c[mu] = slice;
  c[o[0]] = ca0 + ((parity + ca0 + c[o[1]] + c[o[2]] + slice) & 1);
}

/// Where the faces are and which sites touch them (shared by packer and exterior kernel).
struct FaceGeometry {
  LocalGeometry geom;
  int comm_mask = 0;       ///< bit mu: dimension mu split over ranks
  int face_cb[4] = {};     ///< sites of one parity on one face of mu
  int face_begin[5] = {};  ///< exclusive scan of 2 * face_cb over split dimensions

  /// Site on face (mu, side) of the given parity for thread index idx; false past the end.
  LATKE_HOST_DEVICE LATKE_INLINE bool face_site(int idx, int parity, int& mu, int& side, int (&c)[4]) const {
    if (idx >= face_begin[4]) return false;
    mu = 0;
    while (idx >= face_begin[mu + 1]) ++mu;
    int rem = idx - face_begin[mu];
    side = rem >= face_cb[mu];
    slice_site(geom, mu, side ? geom.L[mu] - 1 : 0, side ? rem - face_cb[mu] : rem, parity, c);
    return true;
  }

  /// Index of the site's position on a face of dimension MU (slice_index).
  template <int MU>
  LATKE_HOST_DEVICE LATKE_INLINE int face_index(const int (&c)[4]) const {
    return slice_index<MU>(geom, c);
  }

  LATKE_HOST_DEVICE LATKE_INLINE bool on_split_face(int mu, const int (&c)[4]) const {
    return ((comm_mask >> mu) & 1) && (c[mu] == 0 || c[mu] == geom.L[mu] - 1);
  }
  /// The exterior thread index of a site on a split face: on the face of the lowest split
  /// dimension it touches (the thread that does it, face_site), or -1 when it touches none.
  LATKE_HOST_DEVICE LATKE_INLINE int slot(const int (&c)[4]) const {
    for (int mu = 0; mu < 4; ++mu)
      if (on_split_face(mu, c)) {
        int idx = 0;
        for (int nu = 3; nu >= 0; --nu)
          if (nu != mu) idx = idx * geom.L[nu] + c[nu];
        return face_begin[mu] + (c[mu] == 0 ? 0 : face_cb[mu]) + (idx >> 1);
      }
    return -1;
  }
};

/// @brief The faces of this rank's local volume (split dimensions only).
inline FaceGeometry face_geometry(const Lattice& lat) {
  FaceGeometry f;
  f.geom = LocalGeometry::of(lat);
  f.face_begin[0] = 0;
  for (int mu = 0; mu < 4; ++mu) {
    const bool split = lat.partitioned(mu);
    f.comm_mask |= split << mu;
    f.face_cb[mu] = lat.face_volume_cb(mu);
    f.face_begin[mu + 1] = f.face_begin[mu] + (split ? 2 * f.face_cb[mu] : 0);
  }
  return f;
}

}  // namespace latke
