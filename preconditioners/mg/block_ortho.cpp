// The block orthonormalisation of the multigrid basis (Transfer::orthonormalize, transfer.h):
// a Cholesky QR within every (aggregate, chirality) at once. Compiled by nvcc in CUDA builds.
#include "preconditioners/mg/transfer.h"

#include <algorithm>
#include <vector>

#include "preconditioners/mg/aggregates.h"
#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/launch_team.h"

namespace latke::mg {

namespace {

/// The block orthonormalization as a Cholesky QR within every (aggregate, chirality) at once.
/// A segment is (aggregate, chirality), aggregate = coarse parity x coarse volume_cb + x_cb,
/// chirality fastest; on segment s the basis is a matrix V_s (its elements by nvec). One pass:
/// the Gram matrix G_s = V_s^dag V_s (sums in double), its Cholesky factor G_s = L_s L_s^dag
/// and the inverse W_s = L_s^{-1}, then V_s <- V_s W_s^dag, which is the Gram-Schmidt result:
/// the Q of V_s = Q R with R = L_s^dag upper triangular with a positive diagonal. Each pass
/// reads the basis twice, where Gram-Schmidt vector by vector reads it O(nvec) times. Two
/// passes (the second sees G_s close to 1) make the basis as orthonormal as its storage
/// allows for any condition number up to about 1e7. One team per aggregate runs both passes
/// (OrthoTeamKernel); where its Gram matrices do not fit a team's shared memory (many vectors),
/// three kernels over the whole lattice run each pass (OrthoGramKernel, OrthoCholeskyKernel,
/// OrthoApplyKernel).
template <typename SV>
struct OrthoGeometry {
  AggregateMap map;
  BasisView<SV> basis;
  int n_agg;  ///< aggregates on this rank (the coarse local volume)
  int cpx;    ///< complex components per chirality (fine_reals / 4)

  /// The coarse coordinates of aggregate a.
  LATKE_HOST_DEVICE LATKE_INLINE void aggregate_coords(int a, int (&cc)[4]) const {
    const int cp = a >= map.coarse.volume_cb ? 1 : 0;
    map.coarse.coords(a - cp * map.coarse.volume_cb, cp, cc);
  }
  /// Fine site i (within the block) of the aggregate at coarse coordinates cc: x_cb and parity.
  LATKE_HOST_DEVICE LATKE_INLINE void site(const int (&cc)[4], int i, int& fp, int& x) const {
    int fc[4];
    const int full = map.fine_site(cc, i, fc);
    fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1;
    x = full >> 1;
  }
  /// Complex value (reals r, r + 1) of vector k at site x_cb of parity fp, in one load (the
  /// basis has words of an even number of reals).
  LATKE_HOST_DEVICE LATKE_INLINE Complex<double> value(int k, int fp, int r, int x) const {
    const RealArray<SV> v = basis.at(k, fp);
    const Vector<SV, 2> w = *reinterpret_cast<const Vector<SV, 2>*>(v.data + v.offset(r, x));
    return Complex<double>(w.v[0], w.v[1]);
  }
  /// The aggregate (as above) of fine site x_cb of parity fp.
  LATKE_HOST_DEVICE LATKE_INLINE int aggregate(int x_cb, int fp) const {
    int fc[4], cp;
    map.fine.coords(x_cb, fp, fc);
    const int cx = map.coarse_site(fc, cp);
    return cp * map.coarse.volume_cb + cx;
  }
};

/// Side of the square tiles of G that one thread of OrthoGramKernel sums.
inline constexpr int ortho_tile = 4;

/// gram[(j nvec + k) n_seg + seg] = <V_j, V_k> on segment seg for j >= k: one thread per
/// (segment, tile of the lower triangle), tiles fastest, so that the threads of a warp read
/// the same element of the segment's vectors (with segments fastest, each thread read its own
/// cache lines, and the kernel was slower); a thread loads 2 x 4
/// complex values per element, each as one word, for 16 products.
template <typename SV>
struct OrthoGramKernel {
  OrthoGeometry<SV> g;
  Complex<double>* gram;
  int nvec, n_tiles;  ///< n_tiles: tiles of the lower triangle
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    constexpr int T = ortho_tile;
    const int n_seg = 2 * g.n_agg, seg = idx / n_tiles, chi = seg & 1;
    int t = idx % n_tiles, tj = 0;
    while (t > tj) t -= ++tj;  // tile (tj, tk = t) of the lower triangle, tk <= tj
    const int j0 = T * tj, k0 = T * t;
    int cc[4];
    g.aggregate_coords(seg >> 1, cc);
    Complex<double> acc[T][T];
    for (int u = 0; u < T; ++u)
      for (int v = 0; v < T; ++v) acc[u][v] = Complex<double>(0);
    for (int i = 0; i < g.map.block_volume; ++i) {
      int fp, x;
      g.site(cc, i, fp, x);
      for (int c = 0; c < g.cpx; ++c) {
        const int r = 2 * (chi * g.cpx + c);
        Complex<double> a[T], b[T];
        for (int u = 0; u < T; ++u) {
          a[u] = b[u] = Complex<double>(0);
          if (j0 + u < nvec) a[u] = g.value(j0 + u, fp, r, x);
          if (k0 + u < nvec) b[u] = g.value(k0 + u, fp, r, x);
        }
        for (int u = 0; u < T; ++u)
          for (int v = 0; v < T; ++v) acc[u][v] += conj_mul(a[u], b[v]);
      }
    }
    for (int u = 0; u < T; ++u)
      for (int v = 0; v < T; ++v)
        if (j0 + u < nvec && k0 + v <= j0 + u)
          gram[(static_cast<long>(j0 + u) * nvec + k0 + v) * n_seg + seg] = acc[u][v];
  }
};

/// On each segment, in place: the lower triangle of G becomes its Cholesky factor L, then
/// W = L^{-1} (column by column: W_ik needs L_ij for j > k, still in place, and W_jk for
/// j < i, already written). A pivot not above 1e-12 of its diagonal element of G counts in
/// bad[seg]: the vector vanishes on the segment, or lies in the span of the earlier ones to
/// within 1e-6 of its norm there, the rounding of single-precision storage, so what is left of
/// it is noise.
struct OrthoCholeskyKernel {
  Complex<double>* gram;
  int* bad;
  int nvec, n_seg;
  LATKE_HOST_DEVICE Complex<double>& at(int seg, int j, int k) const {
    return gram[(static_cast<long>(j) * nvec + k) * n_seg + seg];
  }
  LATKE_HOST_DEVICE void operator()(int seg, int) const {
    bool ok = true;
    for (int k = 0; k < nvec; ++k) {
      const double g_kk = at(seg, k, k).re;
      double d = g_kk;
      for (int m = 0; m < k; ++m) d -= norm2(at(seg, k, m));
      if (!(d > 1e-12 * g_kk)) {
        ok = false;
        d = 1;  // keeps the numbers finite; the basis is refused
      }
      const double l = sqrt(d), inv = 1.0 / l;
      at(seg, k, k) = Complex<double>(l, 0.0);
      for (int i = k + 1; i < nvec; ++i) {
        Complex<double> s = at(seg, i, k);
        for (int m = 0; m < k; ++m) s -= at(seg, i, m) * conj(at(seg, k, m));
        at(seg, i, k) = s * inv;
      }
    }
    for (int k = 0; k < nvec; ++k) {
      const double w_kk = 1.0 / at(seg, k, k).re;
      at(seg, k, k) = Complex<double>(w_kk, 0.0);
      for (int i = k + 1; i < nvec; ++i) {
        Complex<double> s = at(seg, i, k) * w_kk;
        for (int j = k + 1; j < i; ++j) s += at(seg, i, j) * at(seg, j, k);
        at(seg, i, k) = s * (-1.0 / at(seg, i, i).re);
      }
    }
    if (!ok) bad[seg] += 1;
  }
};

/// V_k <- sum_{j <= k} conj(W_kj) V_j on every segment: one thread per (fine site of parity
/// fp, complex component), outputs in chunks of 8 from the last down, so that each chunk reads
/// only vectors not yet overwritten.
template <typename SV>
struct OrthoApplyKernel {
  OrthoGeometry<SV> g;
  const Complex<double>* w;
  int nvec, fp;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    constexpr int C = 8;
    const int x = idx / (2 * g.cpx), c = idx % (2 * g.cpx), r = 2 * c;
    const int n_seg = 2 * g.n_agg, seg = g.aggregate(x, fp) * 2 + c / g.cpx;
    for (int k1 = nvec; k1 > 0; k1 -= C) {
      const int k0 = k1 > C ? k1 - C : 0;
      Complex<double> out[C];
      for (int u = 0; u < C; ++u) out[u] = Complex<double>(0);
      for (int j = 0; j < k1; ++j) {
        const Complex<double> v = g.value(j, fp, r, x);
        for (int u = 0; u < C; ++u) {
          const int k = k0 + u;
          if (k < k1 && j <= k) out[u] += conj_mul(w[(static_cast<long>(k) * nvec + j) * n_seg + seg], v);
        }
      }
      for (int u = 0; u < C && k0 + u < k1; ++u) {
        const RealArray<SV> vk = g.basis.at(k0 + u, fp);
        vk.set(r, x, out[u].re);
        vk.set(r + 1, x, out[u].im);
      }
    }
  }
};

/// The block orthonormalization of one aggregate, both chiralities, per team: `passes` Cholesky
/// QR passes without leaving the team. Per pass:
/// - the Gram matrices G_s, summed over tiles of the aggregate's sites staged in shared memory
///   (each thread a TB x TB block of one chirality's lower triangle over a slice of the tile's
///   elements; the slices' sums in shared memory, in double);
/// - their Cholesky factors L_s in place (for each column, its rows in parallel), then W_s =
///   L_s^{-1} in place, row by row (each row's entries in parallel);
/// - V_s <- V_s W_s^dag tile by tile, each thread one element of a site for TB vectors, written
///   back over the staged tile.
/// So each pass reads the aggregate's basis twice and writes it once, and no product leaves
/// the chip, where OrthoGramKernel and OrthoApplyKernel (one thread per Gram tile or basis
/// element over the whole lattice, kept for more vectors than a team holds) read each element
/// from memory once per tile of vectors and G from global memory.
template <typename SV>
struct OrthoTeamKernel {
  static constexpr int TB = 4;      ///< side of the Gram blocks one thread sums
  static constexpr int team = 256;  ///< threads per team (the slices below assume it)
  using C = Complex<double>;
  OrthoGeometry<SV> g;
  int* bad;  ///< per segment: passes whose Cholesky met a pivot not above 1e-12 of its G entry
  int nvec, tile, slices, passes;

  /// Gram blocks of both chiralities' lower triangles.
  LATKE_HOST_DEVICE static int tasks(int nvec) {
    const int nt = (nvec + TB - 1) / TB;
    return nt * (nt + 1);
  }
  /// Complex values per row of the staged tile (odd, so that rows start in different banks).
  LATKE_HOST_DEVICE static int row_length(int tile, int cpx) { return (tile * 2 * cpx) | 1; }
  /// Shared bytes: the slices' Gram sums, a row of W per chirality, the tile (nvec rows), and
  /// the tile's sites and the chiralities' flags.
  LATKE_HOST_DEVICE static std::size_t bytes(int nvec, int cpx, int tile, int slices) {
    const std::size_t nn = static_cast<std::size_t>(nvec) * nvec;
    return sizeof(C) * (slices * 2 * nn + 2 * static_cast<std::size_t>(nvec) +
                        static_cast<std::size_t>(nvec) * row_length(tile, cpx)) +
           sizeof(int) * (2 * static_cast<std::size_t>(tile) + 2);
  }

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const int n = nvec, cpx = g.cpx, ne = 2 * cpx, P = row_length(tile, cpx), nt = (n + TB - 1) / TB;
    const long nn = static_cast<long>(n) * n;
    C* parts = reinterpret_cast<C*>(t.shared());             // [slice][chirality][j][k]; slice 0: G, then L, then W
    C* row = parts + slices * 2 * nn;                        // [chirality][k]: a row of W before it is stored
    C* vt = row + 2 * n;                                     // [vector][element of the tile], P per vector
    int* sfp = reinterpret_cast<int*>(vt + static_cast<long>(n) * P);  // the tile's sites: parity
    int* sx = sfp + tile;                                    // and x_cb
    int* flag = sx + tile;                                   // per chirality
    int cc[4];
    g.aggregate_coords(t.index, cc);
    const int sites = g.map.block_volume;
    t.for_each(2, [&](int chi) { flag[chi] = 0; });
    // The tile of sites [s0, s0 + cnt): every vector's elements into vt.
    auto stage = [&](int s0, int cnt) {
      t.sync();  // the previous tile's readers are done
      t.for_each(cnt, [&](int j) { g.site(cc, s0 + j, sfp[j], sx[j]); });
      t.sync();
      // U loads in flight per thread before their stores (one at a time, each thread waited on
      // its load: a team on an SM of few teams then stalled on memory latency).
      constexpr int U = 8;
      const int items = n * cnt * ne;
      for (int i0 = t.rank * U; i0 < items; i0 += t.size * U) {
        C v[U];
        LATKE_UNROLL for (int u = 0; u < U; ++u) {
          const int w = i0 + u, e = w % (cnt * ne), j = e / ne;
          if (w < items) v[u] = g.value(w / (cnt * ne), sfp[j], 2 * (e % ne), sx[j]);
        }
        LATKE_UNROLL for (int u = 0; u < U; ++u) {
          const int w = i0 + u;
          if (w < items) vt[static_cast<long>(w / (cnt * ne)) * P + w % (cnt * ne)] = v[u];
        }
      }
      t.sync();
    };
    for (int pass = 0; pass < passes; ++pass) {
      t.for_each(static_cast<int>(slices * 2 * nn), [&](int i) { parts[i] = C(0); });
      for (int s0 = 0; s0 < sites; s0 += tile) {
        const int cnt = sites - s0 < tile ? sites - s0 : tile;
        stage(s0, cnt);
        t.for_each(tasks(n) * slices, [&](int w) {
          const int task = w % tasks(n), s = w / tasks(n), chi = task & 1;
          int tk = task >> 1, tj = 0;
          while (tk > tj) tk -= ++tj;  // block (tj, tk) of the lower triangle, tk <= tj
          const int j0 = TB * tj, k0 = TB * tk;
          C acc[TB][TB];
          for (int u = 0; u < TB; ++u)
            for (int v = 0; v < TB; ++v) acc[u][v] = C(0);
          for (int q = s; q < cnt * cpx; q += slices) {  // element q of this chirality in the tile
            const int e = (q / cpx) * ne + chi * cpx + q % cpx;
            C a[TB], b[TB];
            for (int u = 0; u < TB; ++u) {
              a[u] = j0 + u < n ? vt[static_cast<long>(j0 + u) * P + e] : C(0);
              b[u] = k0 + u < n ? vt[static_cast<long>(k0 + u) * P + e] : C(0);
            }
            for (int u = 0; u < TB; ++u)
              for (int v = 0; v < TB; ++v) acc[u][v] += conj_mul(a[u], b[v]);
          }
          C* mine = parts + (static_cast<long>(s) * 2 + chi) * nn;
          for (int u = 0; u < TB; ++u)
            for (int v = 0; v < TB; ++v)
              if (j0 + u < n && k0 + v <= j0 + u) mine[(j0 + u) * n + k0 + v] += acc[u][v];
        });
      }
      t.sync();
      if (slices > 1)
        t.for_each(static_cast<int>(2 * nn), [&](int i) {
          for (int s = 1; s < slices; ++s) parts[i] += parts[s * 2 * nn + i];
        });
      t.sync();
      // G = L L^dag in place: column k's pivot, then its rows below in parallel. A pivot not
      // above 1e-12 of its diagonal element of G: the vector vanishes on the segment, or lies
      // in the span of the earlier ones to within 1e-6 of its norm there, the rounding of
      // single-precision storage, so what is left of it is noise.
      for (int k = 0; k < n; ++k) {
        t.for_each(2, [&](int chi) {
          C* G = parts + chi * nn;
          const double g_kk = G[k * n + k].re;
          double d = g_kk;
          for (int m = 0; m < k; ++m) d -= norm2(G[k * n + m]);
          if (!(d > 1e-12 * g_kk)) {
            flag[chi] = 1;
            d = 1;  // keeps the numbers finite; the basis is refused
          }
          G[k * n + k] = C(sqrt(d), 0.0);
        });
        t.sync();
        t.for_each(2 * (n - k - 1), [&](int w) {
          C* G = parts + (w & 1) * nn;
          const int i = k + 1 + (w >> 1);
          C s = G[i * n + k];
          for (int m = 0; m < k; ++m) s -= G[i * n + m] * conj(G[k * n + m]);
          G[i * n + k] = s * (1.0 / G[k * n + k].re);
        });
        t.sync();
      }
      // W = L^{-1} in place, row by row: W_ii = 1 / L_ii, W_ik = -(sum_{k <= j < i} L_ij W_jk) / L_ii
      // from row i of L and the rows of W above it; the row goes through `row`, as its entries
      // read the L_ij its neighbours overwrite.
      for (int i = 0; i < n; ++i) {
        t.for_each(2 * (i + 1), [&](int w) {
          const int chi = w & 1, k = w >> 1;
          const C* G = parts + chi * nn;
          const double inv = 1.0 / G[i * n + i].re;
          C s(0);
          for (int j = k; j < i; ++j) s += G[i * n + j] * G[j * n + k];
          row[chi * n + k] = k == i ? C(inv, 0.0) : s * (-inv);
        });
        t.sync();
        t.for_each(2 * (i + 1), [&](int w) { parts[(w & 1) * nn + i * n + (w >> 1)] = row[(w & 1) * n + (w >> 1)]; });
        t.sync();
      }
      // V_k <- sum_{j <= k} conj(W_kj) V_j, tile by tile.
      for (int s0 = 0; s0 < sites; s0 += tile) {
        const int cnt = sites - s0 < tile ? sites - s0 : tile;
        stage(s0, cnt);
        t.for_each(cnt * ne * nt, [&](int w) {
          const int e = w % (cnt * ne), k0 = TB * (w / (cnt * ne)), j = e / ne, r = 2 * (e % ne);
          const C* W = parts + ((e % ne) / cpx) * nn;
          C out[TB];
          for (int u = 0; u < TB; ++u) out[u] = C(0);
          const int kmax = k0 + TB < n ? k0 + TB : n;
          for (int m = 0; m < kmax; ++m) {
            const C v = vt[static_cast<long>(m) * P + e];
            for (int u = 0; u < TB; ++u)
              if (m <= k0 + u && k0 + u < n) out[u] += conj_mul(W[(k0 + u) * n + m], v);
          }
          for (int u = 0; u < TB && k0 + u < n; ++u) {
            const RealArray<SV> vk = g.basis.at(k0 + u, sfp[j]);
            vk.set(r, sx[j], out[u].re);
            vk.set(r + 1, sx[j], out[u].im);
          }
        });
      }
      t.sync();  // W is read until here
    }
    t.for_each(2, [&](int chi) {
      if (flag[chi]) bad[2 * t.index + chi] += 1;
    });
  }
};

}  // namespace

void Transfer::orthonormalize() {
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const Backend be = fine_param_.backend;
  const MemoryKind mk = memory_for(be);
  const int n_agg = coarse_->volume_cb() * 2, n_seg = n_agg * 2;
  const int cpx = v_.front().site_reals() / 4;
  Buffer bad(mk, n_seg * sizeof(int));
  zero_bytes(bad.data(), bad.bytes(), mk, compute_stream());
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto s) {
    using S = decltype(s);
    using K = OrthoTeamKernel<S>;
    const OrthoGeometry<S> g{map, basis_view<S>(v_), n_agg, cpx};
    // As many slices of the Gram sums as the team has threads for (at most 4), and tiles of at
    // most 16 sites, within about half an SM's shared memory (two teams on an SM) where that
    // holds one site, else the whole limit; the same choice on both backends.
    const std::size_t limit = team_shared_limit(be), budget = std::min<std::size_t>(limit, 112 * 1024);
    int slices = std::max(1, std::min(4, K::team / K::tasks(nvec_))), tile = 0;
    auto fit = [&](std::size_t cap) {
      for (tile = std::min(16, map.block_volume); tile >= 1; --tile)
        if (K::bytes(nvec_, cpx, tile, slices) <= cap) return true;
      return false;
    };
    while (!fit(budget) && slices > 1) --slices;
    if (tile >= 1 || fit(limit)) {
      launch_teams(be, K{g, static_cast<int*>(bad.data()), nvec_, tile, slices, 2}, n_agg, K::team,
                   K::bytes(nvec_, cpx, tile, slices), 0);
      return;
    }
    // Too many vectors for a team's shared memory (the Gram matrices alone: 2 nvec^2 complex
    // doubles): the Gram tiles, the factors and W^dag by three kernels over the whole lattice,
    // G in global memory.
    const int tiles = (nvec_ + ortho_tile - 1) / ortho_tile, n_tiles = tiles * (tiles + 1) / 2;
    Buffer gram(mk, static_cast<std::size_t>(nvec_) * nvec_ * n_seg * sizeof(Complex<double>));
    auto* gm = static_cast<Complex<double>*>(gram.data());
    for (int pass = 0; pass < 2; ++pass) {
      launch(be, OrthoGramKernel<S>{g, gm, nvec_, n_tiles}, {n_seg * n_tiles}, compute_stream(), false);
      launch(be, OrthoCholeskyKernel{gm, static_cast<int*>(bad.data()), nvec_, n_seg}, {n_seg}, compute_stream(),
             false);
      for (int fp = 0; fp < 2; ++fp)
        launch(be, OrthoApplyKernel<S>{g, gm, nvec_, fp}, {fine_->volume_cb() * 2 * cpx}, compute_stream(), false);
    }
  });
  std::vector<int> host(n_seg);
  synchronize(be);
  copy_bytes(host.data(), bad.data(), bad.bytes());
  int count = 0;
  for (int f : host) count += f > 0;
  require(count == 0, "multigrid: the null-space basis is not of full rank on ", count,
          " (aggregate, chirality) pairs of this rank (a vector vanishes there or lies in the span of the "
          "others); the ",
          nvec_, " vectors do not span the coarse space there");
  pack();
}

}  // namespace latke::mg
