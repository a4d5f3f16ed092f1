// The coalesced parity-blocked layout and its accessor. A field stores, for each parity
// block, NReal reals per site as NReal/V short vectors of V reals (16 bytes where the count
// allows), with the site index fastest:
//   word(v, x_cb) at  base + (v * stride + x_cb) * V
// so that neighbouring threads (sites) read neighbouring 16-byte words. Half precision stores
// 16-bit integers q with real = q * norm / 32767, where norm is the site's largest magnitude
// within each of NGroup groups of reals (norm array: [group][x_cb]), or, with a fixed scale,
// one number for the whole field (links, whose entries are bounded).
#pragma once

#include <cmath>

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

LATKE_HOST_DEVICE LATKE_INLINE short to_fixed(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<short>(__float2int_rn(x));
#else
  return static_cast<short>(std::lrint(x));
#endif
}

/// @tparam Store double, float or short (half).
/// @tparam NReal reals per site.
/// @tparam NGroup half only: groups with a norm each; 0 means one fixed scale for the field.
template <typename Store, int NReal, int NGroup = 1>
struct SiteArray {
  static constexpr bool is_half = sizeof(Store) == 2;
  static constexpr int group = NGroup > 0 ? NReal / NGroup : NReal;
  static constexpr int V = vector_length<Store>(group);
  static constexpr int n_vec = NReal / V;
  static_assert(NReal % V == 0 && group % V == 0, "vectors must not straddle norm groups");

  Store* data = nullptr;
  float* norm = nullptr;  ///< half with NGroup > 0
  float scale = 1.0f;     ///< half with NGroup == 0: largest magnitude in the field
  int stride = 0;         ///< sites per parity block

  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void load(C (&r)[NReal], int x) const {
    const Vector<Store, V>* p = reinterpret_cast<const Vector<Store, V>*>(data);
    LATKE_UNROLL for (int v = 0; v < n_vec; ++v) {
      const Vector<Store, V> w = p[v * stride + x];
      LATKE_UNROLL for (int i = 0; i < V; ++i) r[v * V + i] = static_cast<C>(w.v[i]);
    }
    if constexpr (is_half) {
      if constexpr (NGroup > 0) {
        LATKE_UNROLL for (int g = 0; g < NGroup; ++g) {
          const C s = static_cast<C>(norm[g * stride + x]) * (C(1) / C(fixed_max));
          LATKE_UNROLL for (int i = 0; i < group; ++i) r[g * group + i] *= s;
        }
      } else {
        const C s = static_cast<C>(scale) * (C(1) / C(fixed_max));
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

}  // namespace latke
