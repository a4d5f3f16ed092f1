// The coalesced parity-blocked layout and its accessor. A field stores, for each parity
// block, NReal reals per site cut into short vectors ("words") of up to 16 bytes, with the
// site index fastest: the word of width W that starts at real r0 of the site lies at
//   base + r0 * stride + x_cb * W      (in reals)
// so that neighbouring threads (sites) read neighbouring words. Arrays with a norm per group
// of reals (color spinors) use one width V, the largest that divides NReal (word v at
// (v * stride + x_cb) * V; RealArray reads the same layout); fixed-scale arrays (links) put
// the widest words first and narrower ones after (half 18 reals: 8 + 8 + 2, single 18:
// 4 + 4 + 4 + 4 + 2), so that a thread loads a link in few wide instructions (cutting half
// spinors of 6 reals as 4 + 2 was measured too, and gained nothing). Widths descend, so each
// r0 is a multiple of its W, and every word is aligned when the array's base is aligned to
// 16 bytes: every local extent is even (Lattice requires it), so a parity block holds a
// multiple of 8 sites and a face slice a multiple of 4, and blocks of any number of reals laid
// end to end all start on 16 bytes.
// Half precision stores 16-bit integers q with real = q * norm / 32767, where norm is the
// site's largest magnitude within each of NGroup groups of reals (norm array: [group][x_cb]),
// or, with a fixed scale, one number for the whole field (links, whose entries are bounded). q
// is kept in offset binary (q + 32768 as an unsigned 16-bit word) so that the device decodes
// it with one byte permute and one add, (2^23 + u) - (2^23 + 32768) exactly, instead of an
// integer-to-float conversion, which runs at a quarter of the arithmetic rate and dominated
// half precision.
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

#include "src/core/algebra.h"
#include "src/core/macros.h"

namespace latke {

/// Largest V in {8,4,2,1} with V reals in at most 16 bytes and V dividing n.
template <typename Store>
constexpr int vector_length(int n) {
  for (int v = 8; v > 1; v /= 2)
    if (v * static_cast<int>(sizeof(Store)) <= 16 && n % v == 0) return v;
  return 1;
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Vector {
  T v[V];
};

/// How a site's NReal reals are cut into words (see the top of this file): Greedy, the widest
/// words first (fixed-scale arrays); otherwise words of one width.
template <typename Store, int NReal, bool Greedy>
struct WordCut {
  static constexpr int widest = vector_length<Store>(8);  // 16 bytes, at most 8 reals
  static constexpr int width(int j) {
    if (!Greedy) return vector_length<Store>(NReal);
    int w = widest, left = NReal;
    for (int k = 0; left > 0; ++k) {
      while (w > left) w /= 2;
      if (k == j) return w;
      left -= w;
    }
    return 0;  // past the last word
  }
  static constexpr int count() {
    int n = 0;
    for (int r = 0; r < NReal; ++n) r += width(n);
    return n;
  }
  static constexpr int first(int j) {
    int r = 0;
    for (int k = 0; k < j; ++k) r += width(k);
    return r;
  }
};

constexpr float fixed_max = 32767.0f;

/// Encode a value already scaled to [-32767, 32767] as an offset-binary 16-bit word.
LATKE_HOST_DEVICE LATKE_INLINE short to_fixed(float x) {
#if defined(__CUDA_ARCH__)
  const int q = __float2int_rn(x);
#else
  const int q = static_cast<int>(std::lrint(x));
#endif
  return static_cast<short>(static_cast<unsigned short>(q + 32768));
}

/// to_fixed(x * inv) with one rounding, for x * inv in [-32767, 32767]: on the device the
/// fused multiply-add 2^23 + 32768 + x inv lies in [2^23, 2^24), where the floats are the
/// integers, so its low 16 bits are the offset-binary word (one instruction where a multiply, a
/// conversion and an add were three). Elsewhere the product is rounded, then the integer.
LATKE_HOST_DEVICE LATKE_INLINE short to_fixed(float x, float inv) {
#if defined(__CUDA_ARCH__)
  return static_cast<short>(__float_as_uint(__fmaf_rn(x, inv, 8421376.0f)) & 0xFFFFu);  // 2^23 + 32768
#else
  return to_fixed(x * inv);
#endif
}

/// Decode an offset-binary 16-bit word to its integer value (as a float, exactly).
LATKE_HOST_DEVICE LATKE_INLINE float from_fixed(short w) {
  return static_cast<float>(static_cast<int>(static_cast<unsigned short>(w)) - 32768);
}

/// Decode the two offset-binary words packed in a 32-bit word (low first).
LATKE_HOST_DEVICE LATKE_INLINE void from_fixed2(unsigned w, float& lo, float& hi) {
#if defined(__CUDA_ARCH__)
  lo = __int_as_float(__byte_perm(w, 0x4B00u, 0x5410)) - 8421376.0f;  // 2^23 + 32768
  hi = __int_as_float(__byte_perm(w, 0x4B00u, 0x5432)) - 8421376.0f;
#else
  lo = static_cast<float>(static_cast<int>(w & 0xFFFFu) - 32768);
  hi = static_cast<float>(static_cast<int>(w >> 16) - 32768);
#endif
}

/// @tparam Store double, float or short (half).
/// @tparam NReal reals per site.
/// @tparam NGroup half only: groups with a norm each; 0 means one fixed scale for the field.
template <typename Store, int NReal, int NGroup = 1>
struct SiteArray {
  static constexpr bool is_half = sizeof(Store) == 2;
  static constexpr int group = NGroup > 0 ? NReal / NGroup : NReal;
  using Cut = WordCut<Store, NReal, NGroup == 0>;
  static_assert(NReal % (NGroup > 0 ? NGroup : 1) == 0, "reals must fill the groups");  // no % 0 (nvcc warns)

  Store* data = nullptr;
  float* norm = nullptr;  ///< half with NGroup > 0
  float scale = 1.0f;     ///< half with NGroup == 0: largest magnitude in the field
  int stride = 0;         ///< sites per parity block

  /// Word J of site x.
  template <int J>
  LATKE_HOST_DEVICE LATKE_INLINE Vector<Store, Cut::width(J)>* word(int x) const {
    constexpr int W = Cut::width(J);
    return reinterpret_cast<Vector<Store, W>*>(data + static_cast<long>(Cut::first(J)) * stride +
                                               static_cast<long>(x) * W);
  }

  /// The stored values without half precision's scaling: for half the integers q (as C),
  /// which the caller scales (by norm / 32767, or by unit() with a fixed scale), so that a
  /// kernel can scale a sum of products once instead of every element; else the reals.
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void load_raw(C (&r)[NReal], int x) const {
    static_for<Cut::count()>([&](auto j) {
      constexpr int J = decltype(j)::value, W = Cut::width(J), r0 = Cut::first(J);
      const Vector<Store, W> w = *word<J>(x);
      if constexpr (is_half && W % 2 == 0) {
        Vector<unsigned, W / 2> u;
        memcpy(&u, &w, sizeof(u));
        LATKE_UNROLL for (int i = 0; i < W / 2; ++i) {
          float lo, hi;
          from_fixed2(u.v[i], lo, hi);
          r[r0 + 2 * i] = static_cast<C>(lo);
          r[r0 + 2 * i + 1] = static_cast<C>(hi);
        }
      } else if constexpr (is_half) {
        LATKE_UNROLL for (int i = 0; i < W; ++i) r[r0 + i] = static_cast<C>(from_fixed(w.v[i]));
      } else {
        LATKE_UNROLL for (int i = 0; i < W; ++i) r[r0 + i] = static_cast<C>(w.v[i]);
      }
    });
  }

  /// What a raw value of a fixed-scale array (NGroup == 0) is worth: scale / 32767 in half,
  /// 1 otherwise.
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE C unit() const {
    if constexpr (is_half) return static_cast<C>(scale) * (C(1) / C(fixed_max));
    else return C(1);
  }

  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void load(C (&r)[NReal], int x) const {
    load_raw(r, x);
    if constexpr (is_half) {
      if constexpr (NGroup > 0) {
        LATKE_UNROLL for (int g = 0; g < NGroup; ++g) {
          const C s = static_cast<C>(norm[g * stride + x]) * (C(1) / C(fixed_max));
          LATKE_UNROLL for (int i = 0; i < group; ++i) r[g * group + i] *= s;
        }
      } else {
        const C s = unit<C>();
        LATKE_UNROLL for (int i = 0; i < NReal; ++i) r[i] *= s;
      }
    }
  }

  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void save(const C (&r)[NReal], int x) const {
    if constexpr (is_half) {
      C inv[NGroup > 0 ? NGroup : 1];
      if constexpr (NGroup > 0) {
        LATKE_UNROLL for (int g = 0; g < NGroup; ++g) {
          C m = 0;
          LATKE_UNROLL for (int i = 0; i < group; ++i) m = fmax(m, fabs(r[g * group + i]));
          norm[g * stride + x] = static_cast<float>(m);
          inv[g] = m > C(0) ? C(fixed_max) / m : C(0);
        }
      } else {
        inv[0] = C(fixed_max) / static_cast<C>(scale);
      }
      static_for<Cut::count()>([&](auto j) {
        constexpr int J = decltype(j)::value, W = Cut::width(J), r0 = Cut::first(J);
        Vector<Store, W> w;
        LATKE_UNROLL for (int i = 0; i < W; ++i) {
          const int k = r0 + i;
          const C f = inv[NGroup > 0 ? k / group : 0];
          if constexpr (std::is_same_v<C, float>)
            w.v[i] = to_fixed(r[k], f);
          else
            w.v[i] = to_fixed(static_cast<float>(r[k] * f));
        }
        *word<J>(x) = w;
      });
    } else {
      static_for<Cut::count()>([&](auto j) {
        constexpr int J = decltype(j)::value, W = Cut::width(J), r0 = Cut::first(J);
        Vector<Store, W> w;
        LATKE_UNROLL for (int i = 0; i < W; ++i) w.v[i] = static_cast<Store>(r[r0 + i]);
        *word<J>(x) = w;
      });
    }
  }
};

/// Copies every site's reals from one site array to another, converting storage precision.
template <typename SIn, typename SOut, int NReal, int NGroup>
struct SiteCopyKernel {
  SiteArray<SIn, NReal, NGroup> in;
  SiteArray<SOut, NReal, NGroup> out;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    double r[NReal];
    in.load(r, x_cb);
    out.save(r, x_cb);
  }
};

/// One parity block of the coalesced layout with the number of reals per site known only at
/// run time (multigrid coarse fields: 2 spins x Nvec colors), read and written one real at a
/// time. Real r of site x is element r % V of word (r / V, x), as in SiteArray, with V a
/// power of two (lv = log2 V). Half storage can be read (with the site's norm) but not
/// written: a site's norm depends on all its reals.
template <typename Store>
struct RealArray {
  static constexpr bool is_half = sizeof(Store) == 2;
  Store* data = nullptr;
  float* norm = nullptr;
  int stride = 0;  ///< sites per parity block
  int lv = 0;      ///< log2 of the reals per word: vector_length<Store>(reals per site)

  LATKE_HOST_DEVICE LATKE_INLINE long offset(int r, int x) const {
    return ((static_cast<long>(r >> lv) * stride + x) << lv) + (r & ((1 << lv) - 1));
  }
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE C get(int r, int x) const {
    if constexpr (is_half) return static_cast<C>(from_fixed(data[offset(r, x)])) * static_cast<C>(norm[x]) * (C(1) / C(fixed_max));
    else return static_cast<C>(data[offset(r, x)]);
  }
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void set(int r, int x, C value) const {
    static_assert(!is_half, "half-precision sites are written whole (SiteArray::save)");
    data[offset(r, x)] = static_cast<Store>(value);
  }
};

/// log2 of vector_length<Store>(n): the RealArray::lv of fields with n reals per site.
template <typename Store>
constexpr int vector_shift(int n) {
  int v = vector_length<Store>(n), l = 0;
  while (v > 1) v >>= 1, ++l;
  return l;
}

}  // namespace latke
