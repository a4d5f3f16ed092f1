// The coalesced parity-blocked layout and its accessor. A field stores, for each parity
// block, NReal reals per site as NReal/V short vectors of V reals (16 bytes where the count
// allows), with the site index fastest:
//   word(v, x_cb) at  base + (v * stride + x_cb) * V
// so that neighbouring threads (sites) read neighbouring 16-byte words. Half precision stores
// 16-bit integers q with real = q * norm / 32767, where norm is the site's largest magnitude
// within each of NGroup groups of reals (norm array: [group][x_cb]), or, with a fixed scale,
// one number for the whole field (links, whose entries are bounded). q is kept in offset
// binary (q + 32768 as an unsigned 16-bit word) so that the device decodes it with one byte
// permute and one add, (2^23 + u) - (2^23 + 32768) exactly, instead of an integer-to-float
// conversion, which runs at a quarter of the arithmetic rate and dominated half precision.
#pragma once

#include <cmath>
#include <cstring>

#include "latke/core/macros.h"

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
  static constexpr int V = vector_length<Store>(NReal);
  static constexpr int n_vec = NReal / V;
  static_assert(NReal % V == 0 && (NGroup == 0 || NReal % NGroup == 0), "reals must fill the vectors and groups");

  Store* data = nullptr;
  float* norm = nullptr;  ///< half with NGroup > 0
  float scale = 1.0f;     ///< half with NGroup == 0: largest magnitude in the field
  int stride = 0;         ///< sites per parity block

  /// The stored values without half precision's scaling: for half the integers q (as C),
  /// which the caller scales (by norm / 32767, or by unit() with a fixed scale), so that a
  /// kernel can scale a sum of products once instead of every element; else the reals.
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void load_raw(C (&r)[NReal], int x) const {
    const Vector<Store, V>* p = reinterpret_cast<const Vector<Store, V>*>(data);
    LATKE_UNROLL for (int v = 0; v < n_vec; ++v) {
      const Vector<Store, V> w = p[v * stride + x];
      if constexpr (is_half && V % 2 == 0) {
        Vector<unsigned, V / 2> u;
        memcpy(&u, &w, sizeof(u));
        LATKE_UNROLL for (int i = 0; i < V / 2; ++i) {
          float lo, hi;
          from_fixed2(u.v[i], lo, hi);
          r[v * V + 2 * i] = static_cast<C>(lo);
          r[v * V + 2 * i + 1] = static_cast<C>(hi);
        }
      } else if constexpr (is_half) {
        LATKE_UNROLL for (int i = 0; i < V; ++i) r[v * V + i] = static_cast<C>(from_fixed(w.v[i]));
      } else {
        LATKE_UNROLL for (int i = 0; i < V; ++i) r[v * V + i] = static_cast<C>(w.v[i]);
      }
    }
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
    Vector<Store, V>* p = reinterpret_cast<Vector<Store, V>*>(data);
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
      LATKE_UNROLL for (int v = 0; v < n_vec; ++v) {
        Vector<Store, V> w;
        LATKE_UNROLL for (int i = 0; i < V; ++i) {
          const int k = v * V + i;
          w.v[i] = to_fixed(static_cast<float>(r[k] * inv[NGroup > 0 ? k / group : 0]));
        }
        p[v * stride + x] = w;
      }
    } else {
      LATKE_UNROLL for (int v = 0; v < n_vec; ++v) {
        Vector<Store, V> w;
        LATKE_UNROLL for (int i = 0; i < V; ++i) w.v[i] = static_cast<Store>(r[v * V + i]);
        p[v * stride + x] = w;
      }
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
