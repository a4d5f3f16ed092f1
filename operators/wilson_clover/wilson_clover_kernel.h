// The Wilson-clover site kernels (host and device, one source): the hopping term onto one
// parity with a fused epilogue, the face packer for the halo exchange, and the site-local
// clover term. Formula and conventions: wilson_clover.h, conventions.h.
//
// One thread per output site. Forward hops read U_mu(x) and the neighbour's spinor, spin-
// projected to a half-spinor before the color multiply; backward hops read U_mu(x-mu)^dag.
// When dimension mu is split over ranks, hops leaving the rank read the received face
// instead: from the rank ahead the projected neighbour spinor (this rank applies its own
// U_mu(x)), from the rank behind U^dag times the projected spinor, already multiplied by the
// rank that owns that link. So no link is ever exchanged.
// DslashKernel's modes: interior (sites with no off-rank neighbour, overlapping the exchange),
// exterior (the others, once the faces have arrived; a site on several faces is done by the
// thread of the lowest such dimension). With nothing split over ranks LocalDslashKernel runs
// instead: the same hops without the halo's code (fewer branches and registers; faster in
// every precision, docs/performance.md).
#pragma once

#include "latke/conventions.h"
#include "src/core/algebra.h"
#include "src/core/faces.h"
#include "src/core/half2.h"
#include "src/core/indexing.h"
#include "src/fields/accessors.h"
#include "operators/wilson_clover/wilson_clover.h"

namespace latke::wilson {

/// z times a unit entry (0, +-1, +-i) known at compile time: no multiplications.
template <int RE, int IM, typename T>
LATKE_HOST_DEVICE LATKE_INLINE Complex<T> mul_unit(const Complex<T>& z) {
  if constexpr (RE == 1) return z;
  else if constexpr (RE == -1) return -z;
  else if constexpr (IM == 1) return times_i(z);
  else return -times_i(z);
}

/// h = P psi with P = (1 + s gamma_mu): h_r = psi_r + s sum_k B_rk psi_{2+k}, B = gamma_block(mu).
template <int MU, typename T>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 2> project(const ColorSpinor<T, 3, 4>& psi, T s) {
  ColorSpinor<T, 3, 2> h;
  static_for<2>([&](auto r_) {
    constexpr int r = decltype(r_)::value;
    LATKE_UNROLL for (int c = 0; c < 3; ++c) h.d[r][c] = psi.d[r][c];
    static_for<2>([&](auto k_) {
      constexpr int k = decltype(k_)::value;
      constexpr UnitComplex b = gamma_block(MU, r, k);
      if constexpr (b.re != 0 || b.im != 0) {
        LATKE_UNROLL for (int c = 0; c < 3; ++c) {
          const Complex<T> t = mul_unit<b.re, b.im>(psi.d[2 + k][c]);
          h.d[r][c].re += s * t.re;
          h.d[r][c].im += s * t.im;
        }
      }
    });
  });
  return h;
}

/// acc += (1 + s gamma_mu) acting through h: upper += h, lower += s B^dag h.
template <int MU, typename T>
LATKE_HOST_DEVICE LATKE_INLINE void accumulate(ColorSpinor<T, 3, 4>& acc, const ColorSpinor<T, 3, 2>& h, T s) {
  static_for<2>([&](auto r_) {
    constexpr int r = decltype(r_)::value;
    LATKE_UNROLL for (int c = 0; c < 3; ++c) acc.d[r][c] += h.d[r][c];
    static_for<2>([&](auto k_) {
      constexpr int k = decltype(k_)::value;
      constexpr UnitComplex b = gamma_block(MU, k, r);  // (B^dag)_{rk} = conj(B_{kr})
      if constexpr (b.re != 0 || b.im != 0) {
        LATKE_UNROLL for (int c = 0; c < 3; ++c) {
          const Complex<T> t = mul_unit<b.re, -b.im>(h.d[k][c]);
          acc.d[2 + r][c].re += s * t.re;
          acc.d[2 + r][c].im += s * t.im;
        }
      }
    });
  });
}

/// acc += w (1 + s gamma_mu) through h: accumulate's sums with every term scaled by w, in
/// multiply-adds (what a hop in raw half-precision units adds, w its units' worth).
template <int MU, typename T>
LATKE_HOST_DEVICE LATKE_INLINE void accumulate(ColorSpinor<T, 3, 4>& acc, const ColorSpinor<T, 3, 2>& h, T s, T w) {
  const T sw = s * w;
  static_for<2>([&](auto r_) {
    constexpr int r = decltype(r_)::value;
    LATKE_UNROLL for (int c = 0; c < 3; ++c) {
      acc.d[r][c].re += w * h.d[r][c].re;
      acc.d[r][c].im += w * h.d[r][c].im;
    }
    static_for<2>([&](auto k_) {
      constexpr int k = decltype(k_)::value;
      constexpr UnitComplex b = gamma_block(MU, k, r);
      if constexpr (b.re != 0 || b.im != 0) {
        LATKE_UNROLL for (int c = 0; c < 3; ++c) {
          const Complex<T> t = mul_unit<b.re, -b.im>(h.d[k][c]);
          acc.d[2 + r][c].re += sw * t.re;
          acc.d[2 + r][c].im += sw * t.im;
        }
      }
    });
  });
}

template <typename T>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 2> scale_phase(const ColorSpinor<T, 3, 2>& h, const Complex<T>& z) {
  ColorSpinor<T, 3, 2> r;
  LATKE_UNROLL for (int s = 0; s < 2; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) r.d[s][c] = z * h.d[s][c];
  return r;
}

template <typename T, int N>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, N> from_reals(const T (&r)[6 * N]) {
  ColorSpinor<T, 3, N> h;
  LATKE_UNROLL for (int s = 0; s < N; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c)
    h.d[s][c] = Complex<T>(r[2 * (3 * s + c)], r[2 * (3 * s + c) + 1]);
  return h;
}

template <typename T, int N>
LATKE_HOST_DEVICE LATKE_INLINE void to_reals(const ColorSpinor<T, 3, N>& h, T (&r)[6 * N]) {
  LATKE_UNROLL for (int s = 0; s < N; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) {
    r[2 * (3 * s + c)] = h.d[s][c].re;
    r[2 * (3 * s + c) + 1] = h.d[s][c].im;
  }
}

template <typename Store, Reconstruct R>
struct DslashArg {
  using T = typename compute_type<Store>::type;
  SpinorAccessor<Store, 3, 4> out, in, x;
  GaugeAccessor<Store, R> gauge;
  CloverAccessor<Store> clover;  ///< A or A^-1 of the output parity, as the epilogue needs
  SiteArray<Store, 12, 1> ghost[4][2];  ///< [mu][0: from the rank behind, 1: from the rank ahead]
  FaceGeometry faces;
  int parity = 0;        ///< output parity
  int last_slice[4];     ///< global boundary: offset_mu + c_mu == global_mu - 1
  int first_slice[4];    ///< offset_mu + c_mu == 0, as a local coordinate (or -1)
  int phase_mask = 0;    ///< bit mu: boundary phase of mu is not 1
  Complex<T> phase[4];
  T a = 1;
  T sign = -1;           ///< forward projector 1 + sign gamma: -1, or +1 for the dagger
  int mode = all_sites;
  int cut_mask = 0;      ///< bit mu: hops across block boundaries in mu are dropped (domain-local)
  int inner_mask = 0;    ///< bit mu: hops in mu that stay inside a block are dropped (apply_split)
  int skip_colour = -1;  ///< BlockBoundaryKernel: blocks of this colour skipped (DslashRequest::skip_colour)
  int colour_base = 0;   ///< the global block coordinates of the rank's first block, summed
  int block[4] = {1, 1, 1, 1};
  /// The partial modes' sums of the boundary sites: real r of slot s at partial[r * slots + s].
  T* partial = nullptr;
  int slots = 0;
};

/// A half-precision spinor's stored integers at x (SiteArray::load_raw) and, in w, what one is
/// worth: its site's norm / 32767.
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<float, 3, 4> load_raw(const SpinorAccessor<short, 3, 4>& a, int x,
                                                                 float& w) {
  float r[24];
  a.a.load_raw(r, x);
  w = a.a.norm[x] * (1.0f / fixed_max);
  return from_reals<float, 4>(r);
}

/// The hopping sum D_hop in (x) at one site with no faces (nothing split), for the local and
/// the set kernels; links through `gauge`, the input through `in` (a field, or one field of a
/// set), both indexed by arg's geometry. The same hops as DslashKernel's, which keeps its own
/// loop (with the halo's faces): sharing this one cost it 8 registers in half precision
/// (ptxas). The on-chip Schwarz solver keeps its own copy too (wilson_clover_blocks.cpp).
///
/// Half-precision spinors and links (SpinorAccessor and GaugeAccessor of short) enter in their
/// raw units: each hop's projection and colour product run on the stored integers (the link's
/// third row rebuilt in those units, GaugeAccessor::load_raw), and what the product is worth
/// (the neighbour's norm times the links' unit) scales it inside accumulate's multiply-adds: the
/// 24 + 12 multiplies per hop that scaled each decoded value become seven (the third row's six
/// and the hop's one).
template <typename Store, Reconstruct R, typename Gauge, typename In, typename T = typename compute_type<Store>::type>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> hop_sum(const DslashArg<Store, R>& arg, const Gauge& gauge,
                                                            const In& in, int x_cb, int full, const int (&c)[4]) {
  const int parity = arg.parity;
  const int* L = arg.faces.geom.L;
  const T s = arg.sign;
  constexpr bool raw =
      std::is_same_v<In, SpinorAccessor<short, 3, 4>> && std::is_same_v<Gauge, GaugeAccessor<short, R>>;
  // raw: a raw spinor value times a raw link value is worth w (load_raw) times the links' unit
  [[maybe_unused]] T unit = T(0);
  if constexpr (raw) unit = gauge.unit();
  auto link = [&](int m, int y, int par) {
    if constexpr (raw)
      return gauge.load_raw(m, y, par);
    else
      return gauge.load(m, y, par);
  };
  // The neighbour's spinor at y; raw: in stored units, and w what its product with a raw link is worth.
  auto input = [&](int y, [[maybe_unused]] T& w) {
    if constexpr (raw) {
      const ColorSpinor<T, 3, 4> psi = load_raw(in, y, w);
      w *= unit;
      return psi;
    } else {
      return in.load(y);
    }
  };
  ColorSpinor<T, 3, 4> acc;
  acc.zero();
  int stride = 1;
  static_for<4>([&](auto mu_) {
    constexpr int mu = decltype(mu_)::value;
    bool forward = true, backward = true;  // whether each hop counts: always, unless blocks mask hops in mu
    if (((arg.cut_mask | arg.inner_mask) >> mu) & 1) {
      const int w = c[mu] % arg.block[mu];
      const bool cut = (arg.cut_mask >> mu) & 1, inner = (arg.inner_mask >> mu) & 1;
      forward = w == arg.block[mu] - 1 ? !cut : !inner;
      backward = w == 0 ? !cut : !inner;
    }
    auto add = [&](const ColorSpinor<T, 3, 2>& uh, T sign, [[maybe_unused]] T w) {
      if constexpr (raw)
        accumulate<mu>(acc, uh, sign, w);
      else
        accumulate<mu>(acc, uh, sign);
    };
    if (forward) {  // forward: (1 + s gamma_mu) U_mu(x) psi(x + mu)
      const int nb = c[mu] == L[mu] - 1 ? full - (L[mu] - 1) * stride : full + stride;
      T w{};
      ColorSpinor<T, 3, 2> uh = link(mu, x_cb, parity) * project<mu>(input(nb >> 1, w), s);
      if (((arg.phase_mask >> mu) & 1) && c[mu] == arg.last_slice[mu]) uh = scale_phase(uh, Complex<T>(arg.phase[mu]));
      add(uh, s, w);
    }
    if (backward) {  // backward: (1 - s gamma_mu) U_mu(x - mu)^dag psi(x - mu)
      const int nb = c[mu] == 0 ? full + (L[mu] - 1) * stride : full - stride;
      T w{};
      ColorSpinor<T, 3, 2> uh = adj_mul(link(mu, nb >> 1, 1 - parity), project<mu>(input(nb >> 1, w), -s));
      if (((arg.phase_mask >> mu) & 1) && c[mu] == arg.first_slice[mu])
        uh = scale_phase(uh, Complex<T>(conj(arg.phase[mu])));
      add(uh, -s, w);
    }
    stride *= L[mu];
  });
  return acc;
}

/// The epilogue E of the hopping sum acc at site x_cb (x: the xpay input at that site's field),
/// for DslashKernel and DslashSetKernel.
template <Epilogue E, typename Store, Reconstruct R, typename T>
LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> epilogue(const DslashArg<Store, R>& arg,
                                                             const ColorSpinor<T, 3, 4>& acc,
                                                             const SpinorAccessor<Store, 3, 4>& x, int x_cb) {
  if constexpr (E == Epilogue::plain) {
    return axpy(arg.a, acc, ColorSpinor<T, 3, 4>{});
  } else if constexpr (E == Epilogue::clover_inv) {
    return axpy(arg.a, arg.clover.apply(acc, x_cb), ColorSpinor<T, 3, 4>{});
  } else if constexpr (E == Epilogue::clover_xpay) {
    return axpy(arg.a, acc, arg.clover.apply(x.load(x_cb), x_cb));
  } else if constexpr (E == Epilogue::clover_inv_xpay) {
    return axpy(arg.a, arg.clover.apply(acc, x_cb), x.load(x_cb));
  } else {
    return axpy(arg.a, acc, x.load(x_cb));
  }
}

template <typename Store, Reconstruct R, Epilogue E>
struct DslashKernel {
  using T = typename compute_type<Store>::type;
  DslashArg<Store, R> arg;

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int parity = arg.parity;
    int c[4];
    int x_cb, full;
    const bool partial_in = arg.mode == interior_partial, partial_out = arg.mode == exterior_partial;
    if (arg.mode == exterior || partial_out) {
      int mu0, side;
      if (!arg.faces.face_site(idx, parity, mu0, side, c)) return;
      for (int nu = 0; nu < mu0; ++nu)
        if (arg.faces.on_split_face(nu, c)) return;  // done by the thread of dimension nu
      full = arg.faces.geom.full_index(c);
      x_cb = full >> 1;
    } else {
      x_cb = idx;
      full = arg.faces.geom.coords(x_cb, parity, c);
      if (arg.mode == interior)
        for (int nu = 0; nu < 4; ++nu)
          if (arg.faces.on_split_face(nu, c)) return;
    }
    const int* L = arg.faces.geom.L;
    const T s = arg.sign;
    ColorSpinor<T, 3, 4> acc;
    if (partial_out) {  // the hops on the rank, summed by the interior pass
      LATKE_UNROLL for (int k = 0; k < 12; ++k) acc.d[k / 3][k % 3] =
          Complex<T>(arg.partial[(2 * k) * arg.slots + idx], arg.partial[(2 * k + 1) * arg.slots + idx]);
    } else {
      acc.zero();
    }
    int stride = 1;
    static_for<4>([&](auto mu_) {
      constexpr int mu = decltype(mu_)::value;
      const bool split = (arg.faces.comm_mask >> mu) & 1;
      bool forward = true, backward = true;  // whether each hop counts: always, unless blocks mask hops in mu
      if (((arg.cut_mask | arg.inner_mask) >> mu) & 1) {
        const int w = c[mu] % arg.block[mu];
        const bool cut = (arg.cut_mask >> mu) & 1, inner = (arg.inner_mask >> mu) & 1;
        forward = w == arg.block[mu] - 1 ? !cut : !inner;
        backward = w == 0 ? !cut : !inner;
      }
      if (partial_in || partial_out) {  // the hops from the faces in the exterior pass only
        const bool face_f = split && c[mu] == L[mu] - 1, face_b = split && c[mu] == 0;
        forward = forward && face_f == partial_out;
        backward = backward && face_b == partial_out;
      }
      if (forward) {  // forward: (1 + s gamma_mu) U_mu(x) psi(x + mu)
        ColorSpinor<T, 3, 2> h;
        if (split && c[mu] == L[mu] - 1) {
          T r[12];
          arg.ghost[mu][1].load(r, arg.faces.template face_index<mu>(c));
          h = from_reals<T, 2>(r);
        } else {
          const int nb = c[mu] == L[mu] - 1 ? full - (L[mu] - 1) * stride : full + stride;
          h = project<mu>(arg.in.load(nb >> 1), s);
        }
        ColorSpinor<T, 3, 2> uh = arg.gauge.load(mu, x_cb, parity) * h;
        if (((arg.phase_mask >> mu) & 1) && c[mu] == arg.last_slice[mu]) uh = scale_phase(uh, arg.phase[mu]);
        accumulate<mu>(acc, uh, s);
      }
      if (backward) {  // backward: (1 - s gamma_mu) U_mu(x - mu)^dag psi(x - mu)
        ColorSpinor<T, 3, 2> uh;
        if (split && c[mu] == 0) {
          T r[12];
          arg.ghost[mu][0].load(r, arg.faces.template face_index<mu>(c));
          uh = from_reals<T, 2>(r);
        } else {
          const int nb = c[mu] == 0 ? full + (L[mu] - 1) * stride : full - stride;
          const ColorSpinor<T, 3, 2> h = project<mu>(arg.in.load(nb >> 1), -s);
          uh = adj_mul(arg.gauge.load(mu, nb >> 1, 1 - parity), h);
          if (((arg.phase_mask >> mu) & 1) && c[mu] == arg.first_slice[mu]) uh = scale_phase(uh, conj(arg.phase[mu]));
        }
        accumulate<mu>(acc, uh, -s);
      }
      stride *= L[mu];
    });

    if (partial_in) {
      const int slot = arg.faces.slot(c);
      if (slot >= 0) {  // a boundary site: its sum waits for the exterior pass
        LATKE_UNROLL for (int k = 0; k < 12; ++k) {
          arg.partial[(2 * k) * arg.slots + slot] = acc.d[k / 3][k % 3].re;
          arg.partial[(2 * k + 1) * arg.slots + slot] = acc.d[k / 3][k % 3].im;
        }
        return;
      }
    }
    arg.out.save(epilogue<E>(arg, acc, arg.x, x_cb), x_cb);
  }
};

/// The hopping term with its epilogue where no dimension is split over ranks (one rank, or a
/// domain-local operator): one thread per output site, DslashKernel without the halo's modes
/// and face reads (the hops of hop_sum). With SkipFaces, the interior pass of a halo exchange
/// whose boundary sites are done whole (the "lean" interior, wilson_clover_launch_impl.h): the
/// sites with no hop to a face, which read no face, so none of DslashKernel's face code.
template <typename Store, Reconstruct R, Epilogue E, bool SkipFaces = false>
struct LocalDslashKernel {
  DslashArg<Store, R> arg;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    int c[4];
    const int full = arg.faces.geom.coords(x_cb, arg.parity, c);
    if constexpr (SkipFaces) {
      LATKE_UNROLL for (int nu = 0; nu < 4; ++nu) if (arg.faces.on_split_face(nu, c)) return;
    }
    arg.out.save(epilogue<E>(arg, hop_sum(arg, arg.gauge, arg.in, x_cb, full, c), arg.x, x_cb), x_cb);
  }
};

/// SAP's boundary update on one rank (DslashRequest::skip_colour, split_across_blocks): the hops
/// that cross block boundaries, at the sites of the blocks not of colour arg.skip_colour; the
/// others are zeroed by the plain epilogue and left alone by the clover_inv_xpay one. Threads run over the
/// sites colour by colour, the colour that works first, so that no warp mixes the two: in
/// checkerboard order each x row holds runs of `run` sites of one block (half its x extent),
/// alternately of either colour where the rank holds an even number of blocks along x. Where it
/// does not (run 0), in site order, skipping by colour per thread.
template <typename Store, Reconstruct R, Epilogue E>
struct BlockBoundaryKernel {
  DslashArg<Store, R> arg;
  int run = 0;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const LocalGeometry& g = arg.faces.geom;
    int x_cb = idx;
    bool skipped = false;
    if (run > 0) {
      const int half = g.volume_cb >> 1;
      skipped = idx >= half;
      const int i = skipped ? idx - half : idx;
      const int hx = g.L[0] >> 1, per_row = hx >> 1;  // checkerboard sites of a row, of one colour
      const int r = i / per_row, k = i - r * per_row, yz = r / g.L[1];
      const int row_colour = arg.colour_base + (r - yz * g.L[1]) / arg.block[1] + (yz % g.L[2]) / arg.block[2] +
                             (yz / g.L[2]) / arg.block[3];
      // block bx along x has colour (row_colour + bx) & 1: the working colour's are the other parity's
      const int first = (row_colour + arg.skip_colour + (skipped ? 0 : 1)) & 1, m = k / run;
      x_cb = r * hx + (2 * m + first) * run + (k - m * run);
    }
    int c[4];
    const int full = g.coords(x_cb, arg.parity, c);
    if (run == 0) {
      int colour = arg.colour_base;
      LATKE_UNROLL for (int mu = 0; mu < 4; ++mu) colour += c[mu] / arg.block[mu];
      skipped = (colour & 1) == arg.skip_colour;
    }
    if (skipped) {
      if constexpr (E == Epilogue::plain) {
        ColorSpinor<typename compute_type<Store>::type, 3, 4> zero;
        zero.zero();
        arg.out.save(zero, x_cb);
      }
      return;
    }
    arg.out.save(epilogue<E>(arg, hop_sum(arg, arg.gauge, arg.in, x_cb, full, c), arg.x, x_cb), x_cb);
  }
};

/// Field k of a set made by ColorSpinorField::make_set, from field 0's accessor: its reals
/// `step` words further on (and its norms step_norm further on, in half precision).
template <typename Store>
LATKE_HOST_DEVICE LATKE_INLINE SpinorAccessor<Store, 3, 4> set_field(SpinorAccessor<Store, 3, 4> a, int k, long step,
                                                                     long step_norm) {
  if (a.a.data) a.a.data += k * step;
  if (a.a.norm) a.a.norm += k * step_norm;
  return a;
}

/// The hopping term with its epilogue over a set of `count` fields with no halo (all sites,
/// nothing split; with SkipFaces the interior sites of a split lattice, the boundary sites
/// done per field by DslashKernel's exterior mode), one field of one site per thread. A warp holds 8 consecutive sites of 4
/// fields, so it loads each link and clover word once for the 4 (and every field's spinor
/// words as whole 32-byte sectors); the warps of the window's other fields follow it. It beat
/// 32 sites of one field per warp, and two fields per thread (links decoded once for both, but
/// 128 registers): docs/performance.md.
template <typename Store, Reconstruct R, Epilogue E, bool SkipFaces = false>
struct DslashSetKernel {
  static constexpr int sites_per_warp = 8, fields_per_warp = 32 / sites_per_warp;
  DslashArg<Store, R> arg;            ///< field 0's accessors
  int count = 1, quads = 1, vcb = 0;  ///< quads: warps per site window (fields_per_warp fields each)
  long step = 0, step_norm = 0;

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int w = idx >> 5, lane = idx & 31;
    const int x_cb = (w / quads) * sites_per_warp + lane % sites_per_warp;
    const int k = (w % quads) * fields_per_warp + lane / sites_per_warp;
    if (x_cb >= vcb || k >= count) return;
    int c[4];
    const int full = arg.faces.geom.coords(x_cb, arg.parity, c);
    if constexpr (SkipFaces) {  // the interior pass of a split lattice (the boundary sites: per field, after)
      LATKE_UNROLL for (int nu = 0; nu < 4; ++nu) if (arg.faces.on_split_face(nu, c)) return;
    }
    const SpinorAccessor<Store, 3, 4> in = set_field(arg.in, k, step, step_norm);
    set_field(arg.out, k, step, step_norm)
        .save(epilogue<E>(arg, hop_sum(arg, arg.gauge, in, x_cb, full, c), set_field(arg.x, k, step, step_norm), x_cb), x_cb);
  }
};

/// Two fields of a set in the two lanes of Half2, each divided by its scale (the square root of
/// the sum of its site norms squared, so that no component exceeds 1 in magnitude).
struct HalfPairSpinors {
  SpinorAccessor<short, 3, 4> a, b;
  float inv_a = 0, inv_b = 0;  ///< 1 / (scale 32767)
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<Half2, 3, 4> load(int x) const {
    float ra[24], rb[24];
    a.a.load_raw(ra, x);
    b.a.load_raw(rb, x);
    const float sa = a.a.norm[x] * inv_a, sb = b.a.norm[x] * inv_b;
    ColorSpinor<Half2, 3, 4> v;
    LATKE_UNROLL for (int i = 0; i < 12; ++i) v.d[i / 3][i % 3] =
        Complex<Half2>(Half2::pair(ra[2 * i] * sa, rb[2 * i] * sb), Half2::pair(ra[2 * i + 1] * sa, rb[2 * i + 1] * sb));
    return v;
  }
};

/// A link in both lanes of Half2 (links are unitary: no entry exceeds 1).
template <Reconstruct R>
struct HalfPairLinks {
  GaugeAccessor<short, R> g;
  LATKE_HOST_DEVICE LATKE_INLINE ColorMatrix<Half2, 3> load(int mu, int x, int parity) const {
    const ColorMatrix<float, 3> u = g.load(mu, x, parity);
    ColorMatrix<Half2, 3> h;
    LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) h.e[i][j] =
        Complex<Half2>(Half2(u.e[i][j].re), Half2(u.e[i][j].im));
    return h;
  }
};

/// Sum over sites of field k's norm squared, for the half pair kernel's scales.
struct SetNormSquares {
  SpinorAccessor<short, 3, 4> field0;
  long step_norm = 0;
  LATKE_HOST_DEVICE double operator()(int k, int x) const {
    const double n = field0.a.norm[k * step_norm + x];
    return n * n;
  }
};

/// DslashSetKernel with the hopping sum (and A^-1 where the epilogue has it) in FP16 pair
/// arithmetic (half storage only): a thread holds fields 2j and 2j+1 of one site in the two
/// lanes of each Half2, so every multiply-add serves both, and each link and clover block is
/// decoded once for both. Each field is divided by its scale on load (half's range) and
/// multiplied back before the rest of the epilogue, which runs per field in FP32 as
/// DslashSetKernel's. Half arithmetic keeps 11 bits: the result is good to about 1e-3 of the
/// field's norm, for smoothers and preconditioners, not for residuals.
template <Reconstruct R, Epilogue E, bool SkipFaces = false>
struct DslashSetHalfPairKernel {
  DslashArg<short, R> arg;            ///< field 0's accessors
  int count = 1, quads = 1, vcb = 0;  ///< quads: warps per site window (pairs_per_warp pairs each)
  /// A warp holds 32 >> pairs_log2 consecutive sites of 1 << pairs_log2 pairs (chosen per set
  /// so that no lane idles: 6 pairs as 3 warps of 2, 12 as 3 of 4).
  int pairs_log2 = 2;
  long step = 0, step_norm = 0;
  const double* norm2 = nullptr;  ///< per field: SetNormSquares of its input

  /// pairs_log2 for `pairs` pairs: the widest (most pairs per link load) that idles no more lanes
  /// than any other.
  static int pairs_log2_for(int pairs) {
    int best = 0;
    for (int l = 1; l <= 2; ++l)
      if ((-pairs & ((1 << l) - 1)) <= (-pairs & ((1 << best) - 1))) best = l;
    return best;
  }
  int sites_per_warp() const { return 32 >> pairs_log2; }

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int w = idx >> 5, lane = idx & 31, spw_log2 = 5 - pairs_log2;
    const int x_cb = (w / quads) * (1 << spw_log2) + (lane & ((1 << spw_log2) - 1));
    const int k0 = 2 * (((w % quads) << pairs_log2) + (lane >> spw_log2));
    if (x_cb >= vcb || k0 >= count) return;
    const int k1 = k0 + 1 < count ? k0 + 1 : k0;
    int c[4];
    const int full = arg.faces.geom.coords(x_cb, arg.parity, c);
    if constexpr (SkipFaces) {
      LATKE_UNROLL for (int nu = 0; nu < 4; ++nu) if (arg.faces.on_split_face(nu, c)) return;
    }
    const float s0 = sqrtf(static_cast<float>(norm2[k0])), s1 = sqrtf(static_cast<float>(norm2[k1]));
    constexpr float unit = 1.0f / 32767.0f;
    HalfPairSpinors in;
    in.a = set_field(arg.in, k0, step, step_norm);
    in.b = set_field(arg.in, k1, step, step_norm);
    in.inv_a = s0 > 0 ? unit / s0 : 0.0f;
    in.inv_b = s1 > 0 ? unit / s1 : 0.0f;
    ColorSpinor<Half2, 3, 4> acc =
        hop_sum<short, R, HalfPairLinks<R>, HalfPairSpinors, Half2>(arg, HalfPairLinks<R>{arg.gauge}, in, x_cb, full, c);
    // A^-1 of the sum in the pair arithmetic too (its entries are of order one), the rest per field
    constexpr bool inv = E == Epilogue::clover_inv || E == Epilogue::clover_inv_xpay;
    if constexpr (inv) acc = clover_half_pair(arg.clover, acc, x_cb);
    ColorSpinor<float, 3, 4> h0, h1;
    LATKE_UNROLL for (int i = 0; i < 12; ++i) {
      const Complex<Half2> z = acc.d[i / 3][i % 3];
      h0.d[i / 3][i % 3] = Complex<float>(z.re.lo() * s0, z.im.lo() * s0);
      h1.d[i / 3][i % 3] = Complex<float>(z.re.hi() * s1, z.im.hi() * s1);
    }
    constexpr Epilogue rest = E == Epilogue::clover_inv ? Epilogue::plain : E == Epilogue::clover_inv_xpay ? Epilogue::xpay : E;
    set_field(arg.out, k0, step, step_norm)
        .save(epilogue<rest>(arg, h0, set_field(arg.x, k0, step, step_norm), x_cb), x_cb);
    if (k1 != k0)
      set_field(arg.out, k1, step, step_norm)
          .save(epilogue<rest>(arg, h1, set_field(arg.x, k1, step, step_norm), x_cb), x_cb);
  }

  /// A (or A^-1) times v in the pair arithmetic: the half blocks' entries scaled to their values
  /// in FP32, then both lanes of each Half2.
  LATKE_HOST_DEVICE LATKE_INLINE static ColorSpinor<Half2, 3, 4> clover_half_pair(const CloverAccessor<short>& a,
                                                                                  const ColorSpinor<Half2, 3, 4>& v,
                                                                                  int x_cb) {
    CloverBlock<float> raw[2];
    float scale[2];
    a.load_raw(raw, scale, x_cb);
    return apply_chiral_blocks(v, [&](auto k_) {
      constexpr int k = decltype(k_)::value;
      CloverBlock<Half2> b;
      LATKE_UNROLL for (int i = 0; i < 6; ++i) b.diag[i] = Half2(raw[k].diag[i] * scale[k]);
      LATKE_UNROLL for (int i = 0; i < 15; ++i)
        b.off[i] = Complex<Half2>(Half2(raw[k].off[i].re * scale[k]), Half2(raw[k].off[i].im * scale[k]));
      return b;
    });
  }
};

/// Packs the faces of the input (parity `parity`) for the ranks behind and ahead.
template <typename Store, Reconstruct R>
struct PackKernel {
  using T = typename compute_type<Store>::type;
  SpinorAccessor<Store, 3, 4> in;
  GaugeAccessor<Store, R> gauge;
  SiteArray<Store, 12, 1> send[4][2];  ///< [mu][side]
  FaceGeometry faces;
  int parity = 0;  ///< parity of the input sites
  int last_slice[4];
  int phase_mask = 0;
  Complex<T> phase[4];
  T sign = -1;

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    int mu, side, c[4];
    if (!faces.face_site(idx, parity, mu, side, c)) return;
    const int full = faces.geom.full_index(c);
    const ColorSpinor<T, 3, 4> psi = in.load(full >> 1);
    static_for<4>([&](auto mu_) {
      constexpr int m = decltype(mu_)::value;
      if (m != mu) return;
      const int f = faces.template face_index<m>(c);
      T r[12];
      if (side == 0) {  // the rank behind uses us as its forward neighbour
        to_reals(project<m>(psi, sign), r);
      } else {          // the rank ahead uses U_mu(y)^dag (1 - s gamma) psi(y) from us
        ColorSpinor<T, 3, 2> uh = adj_mul(gauge.load(m, full >> 1, parity), project<m>(psi, -sign));
        if (((phase_mask >> m) & 1) && c[m] == last_slice[m]) uh = scale_phase(uh, conj(phase[m]));
        to_reals(uh, r);
      }
      send[m][side].save(r, f);
    });
  }
};

/// out = A in (or A^-1 in) site by site.
template <typename Store>
struct CloverKernel {
  SpinorAccessor<Store, 3, 4> out, in;
  CloverAccessor<Store> clover;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const { out.save(clover.apply(in.load(x_cb), x_cb), x_cb); }
};

}  // namespace latke::wilson
