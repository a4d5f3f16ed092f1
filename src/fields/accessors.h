// Typed views of the coalesced layout that kernels use: load/save a site's color-spinor,
// link matrix or clover blocks as register objects in the compute precision. Storage and
// compute precision are separate template parameters (Compute defaults to the natural one).
#pragma once

#include "src/core/algebra.h"
#include "src/fields/precision.h"
#include "src/fields/site_array.h"

namespace latke {

/// One parity block of a color-spinor field. Site reals are ordered [spin][color][re,im].
template <typename Store, int Nc, int Ns, typename Compute = typename compute_type<Store>::type>
struct SpinorAccessor {
  static constexpr int n_real = 2 * Nc * Ns;
  using Spinor = ColorSpinor<Compute, Nc, Ns>;
  SiteArray<Store, n_real, 1> a;

  LATKE_HOST_DEVICE LATKE_INLINE Spinor load(int x_cb) const {
    Compute r[n_real];
    a.load(r, x_cb);
    Spinor s;
    LATKE_UNROLL for (int i = 0; i < Ns; ++i) LATKE_UNROLL for (int c = 0; c < Nc; ++c)
      s.d[i][c] = Complex<Compute>(r[2 * (i * Nc + c)], r[2 * (i * Nc + c) + 1]);
    return s;
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const Spinor& s, int x_cb) const {
    Compute r[n_real];
    LATKE_UNROLL for (int i = 0; i < Ns; ++i) LATKE_UNROLL for (int c = 0; c < Nc; ++c) {
      r[2 * (i * Nc + c)] = s.d[i][c].re;
      r[2 * (i * Nc + c) + 1] = s.d[i][c].im;
    }
    a.save(r, x_cb);
  }
};

/// Gauge links: block (mu, parity) at base + (mu*2 + parity) * n_real * stride reals.
template <typename Store, Reconstruct R, typename Compute = typename compute_type<Store>::type>
struct GaugeAccessor {
  static constexpr int n_real = static_cast<int>(R);
  using Matrix = ColorMatrix<Compute, 3>;
  Store* data = nullptr;
  float scale = 1.0f;  ///< half: largest link entry magnitude
  int stride = 0;      ///< volume_cb

  LATKE_HOST_DEVICE LATKE_INLINE SiteArray<Store, n_real, 0> block(int mu, int parity) const {
    SiteArray<Store, n_real, 0> s;
    s.data = data + static_cast<long>(mu * 2 + parity) * n_real * stride;
    s.scale = scale;
    s.stride = stride;
    return s;
  }

  LATKE_HOST_DEVICE LATKE_INLINE Matrix load(int mu, int x_cb, int parity) const {
    Compute r[n_real];
    block(mu, parity).load(r, x_cb);
    Matrix u;
    LATKE_UNROLL for (int i = 0; i < n_real / 6; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j)
      u.e[i][j] = Complex<Compute>(r[2 * (3 * i + j)], r[2 * (3 * i + j) + 1]);
    if constexpr (R == Reconstruct::r12) third_row(u);
    return u;
  }

  /// The link in raw storage units (SiteArray::load_raw): the link is unit() times it. Half
  /// precision kernels that sum many products of links with one fixed scale (staggered)
  /// scale the sum once instead of every entry.
  LATKE_HOST_DEVICE LATKE_INLINE Matrix load_raw(int mu, int x_cb, int parity) const {
    const SiteArray<Store, n_real, 0> b = block(mu, parity);
    Compute r[n_real];
    b.load_raw(r, x_cb);
    Matrix u;
    LATKE_UNROLL for (int i = 0; i < n_real / 6; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j)
      u.e[i][j] = Complex<Compute>(r[2 * (3 * i + j)], r[2 * (3 * i + j) + 1]);
    if constexpr (R == Reconstruct::r12) {
      third_row(u);  // in raw units the rows' cross product is unit() too large
      if constexpr (sizeof(Store) == 2) {
        const Compute w = b.template unit<Compute>();
        LATKE_UNROLL for (int j = 0; j < 3; ++j) u.e[2][j] *= w;
      }
    }
    return u;
  }

  /// What a raw value is worth (see load_raw).
  LATKE_HOST_DEVICE LATKE_INLINE Compute unit() const { return block(0, 0).template unit<Compute>(); }

  /// Third row of an SU(3) matrix from the first two: conj(row0 x row1).
  LATKE_HOST_DEVICE LATKE_INLINE static void third_row(Matrix& u) {
    u.e[2][0] = conj(mac(u.e[0][1] * u.e[1][2], -u.e[0][2], u.e[1][1]));
    u.e[2][1] = conj(mac(u.e[0][2] * u.e[1][0], -u.e[0][0], u.e[1][2]));
    u.e[2][2] = conj(mac(u.e[0][0] * u.e[1][1], -u.e[0][1], u.e[1][0]));
  }

  LATKE_HOST_DEVICE LATKE_INLINE void save(const Matrix& u, int mu, int x_cb, int parity) const {
    Compute r[n_real];
    LATKE_UNROLL for (int i = 0; i < n_real / 6; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
      r[2 * (3 * i + j)] = u.e[i][j].re;
      r[2 * (3 * i + j) + 1] = u.e[i][j].im;
    }
    block(mu, parity).save(r, x_cb);
  }
};

/// A 6x6 Hermitian chiral block of the clover term: 6 real diagonal entries and the 15
/// complex entries below the diagonal, (1,0),(2,0),(2,1),(3,0),... (row-major lower triangle).
template <typename T>
struct CloverBlock {
  T diag[6];
  Complex<T> off[15];
};

LATKE_HOST_DEVICE constexpr int tri_index(int i, int j) { return i * (i - 1) / 2 + j; }  // i > j

/// out = H in for one chiral block; in/out are the 6 components (spin_local*3 + color).
template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE void apply_block(const CloverBlock<T>& h, const Complex<T> (&in)[6],
                                                Complex<T> (&out)[6]) {
  LATKE_UNROLL for (int i = 0; i < 6; ++i) {
    Complex<T> s = h.diag[i] * in[i];
    LATKE_UNROLL for (int j = 0; j < 6; ++j) {
      if (j < i) s = mac(s, h.off[tri_index(i, j)], in[j]);
      if (j > i) s = conj_mac(s, h.off[tri_index(j, i)], in[j]);
    }
    out[i] = s;
  }
}

/// out = A in chiral block by chiral block: spins 2k and 2k + 1 of in times block_of(k), for k
/// a std::integral_constant (0, 1), so that a caller may load its block at a constant offset.
template <typename T, typename BlockOf>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> apply_chiral_blocks(const ColorSpinor<T, 3, 4>& in,
                                                                        const BlockOf& block_of) {
  ColorSpinor<T, 3, 4> out;
  static_for<2>([&](auto k_) {
    constexpr int k = decltype(k_)::value;
    const CloverBlock<T> b = block_of(k_);
    Complex<T> v[6], w[6];
    LATKE_UNROLL for (int i = 0; i < 6; ++i) v[i] = in.d[2 * k + i / 3][i % 3];
    apply_block(b, v, w);
    LATKE_UNROLL for (int i = 0; i < 6; ++i) out.d[2 * k + i / 3][i % 3] = w[i];
  });
  return out;
}

/// Clover field (or its inverse): 72 reals per site, chiral block b at reals [36b, 36b+36):
/// 6 diagonal reals, then the 15 lower-triangle complex entries. Half: one norm per block.
template <typename Store, typename Compute = typename compute_type<Store>::type>
struct CloverAccessor {
  static constexpr int n_real = 72;
  SiteArray<Store, n_real, 2> a;

  /// The blocks as stored, without half precision's per-block scale (see SiteArray::load_raw);
  /// scale[k] is what a raw value of block k is worth (1 above half).
  LATKE_HOST_DEVICE LATKE_INLINE void load_raw(CloverBlock<Compute> (&b)[2], Compute (&scale)[2], int x_cb) const {
    Compute r[n_real];
    a.load_raw(r, x_cb);
    LATKE_UNROLL for (int k = 0; k < 2; ++k) {
      LATKE_UNROLL for (int i = 0; i < 6; ++i) b[k].diag[i] = r[36 * k + i];
      LATKE_UNROLL for (int i = 0; i < 15; ++i)
        b[k].off[i] = Complex<Compute>(r[36 * k + 6 + 2 * i], r[36 * k + 7 + 2 * i]);
      if constexpr (SiteArray<Store, n_real, 2>::is_half)
        scale[k] = static_cast<Compute>(a.norm[k * a.stride + x_cb]) * (Compute(1) / Compute(fixed_max));
      else
        scale[k] = Compute(1);
    }
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const CloverBlock<Compute> (&b)[2], int x_cb) const {
    Compute r[n_real];
    LATKE_UNROLL for (int k = 0; k < 2; ++k) {
      LATKE_UNROLL for (int i = 0; i < 6; ++i) r[36 * k + i] = b[k].diag[i];
      LATKE_UNROLL for (int i = 0; i < 15; ++i) {
        r[36 * k + 6 + 2 * i] = b[k].off[i].re;
        r[36 * k + 7 + 2 * i] = b[k].off[i].im;
      }
    }
    a.save(r, x_cb);
  }

  /// out = A in for a Wilson spinor (both chiral blocks). In half the block's raw values
  /// multiply and its scale is applied to the 6 results, not to the 36 entries.
  template <typename T>
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> apply(const ColorSpinor<T, 3, 4>& in, int x_cb) const {
    CloverBlock<Compute> b[2];
    Compute scale[2];
    load_raw(b, scale, x_cb);
    ColorSpinor<T, 3, 4> out;
    LATKE_UNROLL for (int k = 0; k < 2; ++k) {
      Complex<T> v[6], w[6];
      LATKE_UNROLL for (int i = 0; i < 6; ++i) v[i] = in.d[2 * k + i / 3][i % 3];
      apply_block(b[k], v, w);
      LATKE_UNROLL for (int i = 0; i < 6; ++i) out.d[2 * k + i / 3][i % 3] = static_cast<T>(scale[k]) * w[i];
    }
    return out;
  }
};

}  // namespace latke
