// The staggered site kernels (host and device, one source): D onto one parity with a fused
// out = a D in + b x, and the face packer for the halo exchange. Formula and conventions:
// staggered.h, conventions.h.
//
// One thread per output site; per direction it reads the fat link and the neighbour at +-1
// and, improved, the long link and the neighbour at +-3, in the coalesced layout. The etas
// come from the site's coordinates (a sign per direction), boundary phases from its global
// coordinate. In half precision every link of a field shares one scale, so products are
// formed from the raw stored integers and the sums scaled once at the end.
//
// When dimension mu is split over ranks, a face is `depth` slices deep (3 improved, 1 naive):
// the rank behind sends its slices L-depth..L-1 and the rank ahead its slices 0..depth-1, as
// plain color vectors; slot k of a received face holds the sender's k-th slice of those. Hops
// leaving the rank forward use this rank's own links; backward hops use ghost links (the
// links of the rank behind's last slices, exchanged once at construction). Modes: all sites
// (nothing split), interior (sites at least `depth` from every split boundary, overlapping
// the exchange), exterior (the others, once the faces have arrived; a site near several
// boundaries is done by the thread of the lowest such dimension).
#pragma once

#include "src/core/algebra.h"
#include "src/core/faces.h"
#include "src/core/indexing.h"
#include "src/fields/accessors.h"
#include "operators/staggered/staggered.h"

namespace latke::staggered {

template <typename T>
using Vector3 = ColorSpinor<T, 3, 1>;

template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Vector3<T> vector_from(const T (&r)[6]) {
  Vector3<T> v;
  LATKE_UNROLL for (int c = 0; c < 3; ++c) v.d[0][c] = Complex<T>(r[2 * c], r[2 * c + 1]);
  return v;
}

template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE Vector3<T> times(const Complex<T>& z, const Vector3<T>& v) {
  Vector3<T> r;
  LATKE_UNROLL for (int c = 0; c < 3; ++c) r.d[0][c] = z * v.d[0][c];
  return r;
}

/// Where the faces are and which sites touch them (shared by packer and kernel).
struct Faces {
  LocalGeometry geom;
  int depth = 1;           ///< slices per face
  int comm_mask = 0;       ///< bit mu: dimension mu split over ranks
  int face_cb[4] = {};     ///< sites of one parity on one slice of mu
  int band[4] = {};        ///< slices within depth of a boundary of split mu: min(2 depth, L_mu)
  int band_begin[5] = {};  ///< exclusive scan of band * face_cb over split dimensions
  int pack_begin[5] = {};  ///< exclusive scan of 2 * depth * face_cb over split dimensions

  /// Index of the site's position on a slice of dimension MU (slice_index).
  template <int MU>
  LATKE_HOST_DEVICE LATKE_INLINE int face_index(const int (&c)[4]) const {
    return slice_index<MU>(geom, c);
  }

  /// Coordinates of the site of the given parity with face index f on slice `slice` of mu.
  LATKE_HOST_DEVICE LATKE_INLINE void slice_site(int mu, int slice, int f, int parity, int (&c)[4]) const {
    latke::slice_site(geom, mu, slice, f, parity, c);
  }

  LATKE_HOST_DEVICE LATKE_INLINE bool split(int mu) const { return (comm_mask >> mu) & 1; }

  /// Whether the site has a neighbour on another rank along split dimension mu.
  LATKE_HOST_DEVICE LATKE_INLINE bool near_boundary(int mu, const int (&c)[4]) const {
    return split(mu) && (c[mu] < depth || c[mu] >= geom.L[mu] - depth);
  }

  /// The exterior site of thread idx (parity given); false past the end.
  LATKE_HOST_DEVICE LATKE_INLINE bool exterior_site(int idx, int parity, int& mu, int (&c)[4]) const {
    if (idx >= band_begin[4]) return false;
    mu = 0;
    while (idx >= band_begin[mu + 1]) ++mu;
    const int rem = idx - band_begin[mu];
    const int j = rem / face_cb[mu], f = rem - j * face_cb[mu];
    const int L = geom.L[mu];
    const int slice = band[mu] < L && j >= depth ? L - 2 * depth + j : j;
    slice_site(mu, slice, f, parity, c);
    return true;
  }

  /// The face slot (mu, side, k, f) packed by thread idx; false past the end.
  LATKE_HOST_DEVICE LATKE_INLINE bool pack_slot(int idx, int& mu, int& side, int& k, int& f) const {
    if (idx >= pack_begin[4]) return false;
    mu = 0;
    while (idx >= pack_begin[mu + 1]) ++mu;
    int rem = idx - pack_begin[mu];
    const int per_side = depth * face_cb[mu];
    side = rem >= per_side;
    rem -= side * per_side;
    k = rem / face_cb[mu];
    f = rem - k * face_cb[mu];
    return true;
  }
};

template <typename Store, Reconstruct RF, Reconstruct RL>
struct DslashArg {
  using T = typename compute_type<Store>::type;
  SpinorAccessor<Store, 3, 1> out, in, x;
  GaugeAccessor<Store, RF> fat;
  GaugeAccessor<Store, RL> lng;
  /// Ghost links of split mu with stride face_cb, block index = slot: fat slot = parity of
  /// the link's site; long slot = 2 k + parity, k = 0..2 for the rank behind's slice L-3+k.
  GaugeAccessor<Store, RF> ghost_fat[4];
  GaugeAccessor<Store, RL> ghost_long[4];
  SiteArray<Store, 6, 1> ghost[4][2];  ///< received faces [mu][0: from behind, 1: from ahead]
  Faces faces;
  int parity = 0;      ///< output parity
  int offset[4];       ///< global coordinate of local 0
  int global[4];       ///< global extents
  int phase_mask = 0;  ///< bit mu: boundary phase of mu is not 1
  Complex<T> phase[4];
  T a = 1, b = 0;    ///< out = a D in + b x
  T long_scale = 1;  ///< c of long links stored as c X (reconstruct 12)
  int mode = all_sites;
};

/// Comm: false when no dimension is split (a single rank's lattice): the halo branches and
/// the ghost reads are compiled out (used for naive; see run_dslash).
template <typename Store, Reconstruct RF, Reconstruct RL, bool Improved, bool Xpay, bool Comm>
struct DslashKernel {
  using T = typename compute_type<Store>::type;
  DslashArg<Store, RF, RL> arg;

  /// A received neighbour: slot k of the face from behind (dir 0) or ahead (dir 1).
  LATKE_HOST_DEVICE LATKE_INLINE Vector3<T> ghost_vector(int mu, int dir, int k, int f) const {
    T r[6];
    arg.ghost[mu][dir].load(r, k * arg.faces.face_cb[mu] + f);
    return vector_from(r);
  }

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int parity = arg.parity, q = 1 - parity;
    int c[4];
    int x_cb, full;
    if (Comm && arg.mode == exterior) {
      int mu0;
      if (!arg.faces.exterior_site(idx, parity, mu0, c)) return;
      for (int nu = 0; nu < mu0; ++nu)
        if (arg.faces.near_boundary(nu, c)) return;  // done by the thread of dimension nu
      full = arg.faces.geom.full_index(c);
      x_cb = full >> 1;
    } else {
      x_cb = idx;
      full = arg.faces.geom.coords(x_cb, parity, c);
      if (Comm && arg.mode == interior)
        for (int nu = 0; nu < 4; ++nu)
          if (arg.faces.near_boundary(nu, c)) return;
    }
    const int* L = arg.faces.geom.L;
    const int depth = arg.faces.depth;
    // Sums in raw link units (see SiteArray::load_raw), etas applied.
    Vector3<T> acc_fat, acc_long;
    acc_fat.zero();
    acc_long.zero();
    int stride = 1, eta_sum = 0;
    static_for<4>([&](auto mu_) {
      constexpr int mu = decltype(mu_)::value;
      const bool split = Comm && arg.faces.split(mu);
      const T eta = (eta_sum & 1) ? T(-1) : T(1);
      const bool phased = (arg.phase_mask >> mu) & 1;
      const int g = c[mu] + arg.offset[mu];  // global coordinate
      const int f = split ? arg.faces.template face_index<mu>(c) : 0;
      {  // + eta V_mu(x) chi(x + mu)
        Vector3<T> chi;
        if (split && c[mu] == L[mu] - 1) {
          chi = ghost_vector(mu, 1, 0, f);
        } else {
          const int nb = c[mu] == L[mu] - 1 ? full - (L[mu] - 1) * stride : full + stride;
          chi = arg.in.load(nb >> 1);
        }
        Vector3<T> t = arg.fat.load_raw(mu, x_cb, parity) * chi;
        if (phased && g == arg.global[mu] - 1) t = times(arg.phase[mu], t);
        acc_fat = axpy(eta, t, acc_fat);
      }
      {  // - eta V_mu(x - mu)^dag chi(x - mu)
        Vector3<T> t;
        if (split && c[mu] == 0) {
          t = adj_mul(arg.ghost_fat[mu].load_raw(0, f, q), ghost_vector(mu, 0, depth - 1, f));
        } else {
          const int nb = c[mu] == 0 ? full + (L[mu] - 1) * stride : full - stride;
          t = adj_mul(arg.fat.load_raw(mu, nb >> 1, q), arg.in.load(nb >> 1));
        }
        if (phased && g == 0) t = times(conj(arg.phase[mu]), t);
        acc_fat = axpy(-eta, t, acc_fat);
      }
      if constexpr (Improved) {
        {  // + eta W_mu(x) chi(x + 3 mu)
          Vector3<T> chi;
          if (split && c[mu] + 3 >= L[mu]) {
            chi = ghost_vector(mu, 1, c[mu] + 3 - L[mu], f);
          } else {
            int n = c[mu] + 3;  // L_mu >= 4 for asqtad: at most one wrap
            if (n >= L[mu]) n -= L[mu];
            chi = arg.in.load((full + (n - c[mu]) * stride) >> 1);
          }
          Vector3<T> t = arg.lng.load_raw(mu, x_cb, parity) * chi;
          if (phased && g >= arg.global[mu] - 3) t = times(arg.phase[mu], t);
          acc_long = axpy(eta, t, acc_long);
        }
        {  // - eta W_mu(x - 3 mu)^dag chi(x - 3 mu)
          Vector3<T> t;
          if (split && c[mu] < 3) {
            t = adj_mul(arg.ghost_long[mu].load_raw(c[mu], f, q), ghost_vector(mu, 0, c[mu], f));
          } else {
            int n = c[mu] - 3;
            if (n < 0) n += L[mu];
            const int nb = (full + (n - c[mu]) * stride) >> 1;
            t = adj_mul(arg.lng.load_raw(mu, nb, q), arg.in.load(nb));
          }
          if (phased && g < 3) t = times(conj(arg.phase[mu]), t);
          acc_long = axpy(-eta, t, acc_long);
        }
      }
      eta_sum += c[mu];
      stride *= L[mu];
    });

    const T a_fat = arg.a * arg.fat.unit();
    Vector3<T> result = axpy(a_fat, acc_fat, Vector3<T>{});
    if constexpr (Improved) {
      const T c_long = RL == Reconstruct::r12 ? arg.long_scale : T(1);
      result = axpy(arg.a * c_long * arg.lng.unit(), acc_long, result);
    }
    if constexpr (Xpay) result = axpy(arg.b, arg.x.load(x_cb), result);
    arg.out.save(result, x_cb);
  }
};

/// Packs the input's (parity `parity`) boundary slices for the ranks behind and ahead.
template <typename Store>
struct PackKernel {
  SpinorAccessor<Store, 3, 1> in;
  SiteArray<Store, 6, 1> send[4][2];  ///< [mu][side], slot k * face_cb + f
  Faces faces;
  int parity = 0;

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    using T = typename compute_type<Store>::type;
    int mu, side, k, f, c[4];
    if (!faces.pack_slot(idx, mu, side, k, f)) return;
    const int slice = side == 0 ? k : faces.geom.L[mu] - faces.depth + k;
    faces.slice_site(mu, slice, f, parity, c);
    T r[6];
    in.a.load(r, faces.geom.full_index(c) >> 1);
    send[mu][side].save(r, k * faces.face_cb[mu] + f);
  }
};

}  // namespace latke::staggered
