// The block orthonormalisation of the multigrid basis (Transfer::orthonormalize, transfer.h):
// a Cholesky QR within every (aggregate, chirality) at once. Compiled by nvcc in CUDA builds.
#include "preconditioners/mg/transfer.h"

#include <vector>

#include "preconditioners/mg/aggregates.h"
#include "src/core/error.h"
#include "src/core/launch.h"

namespace latke::mg {

namespace {

/// The block orthonormalization as a Cholesky QR within every (aggregate, chirality) at once.
/// A segment is (aggregate, chirality), aggregate = coarse parity x coarse volume_cb + x_cb,
/// chirality fastest; on segment s the basis is a matrix V_s (its elements by nvec). One pass:
/// the Gram matrix G_s = V_s^dag V_s (OrthoGramKernel, sums in double), its Cholesky factor
/// G_s = L_s L_s^dag and the inverse W_s = L_s^{-1} (OrthoCholeskyKernel, one thread per
/// segment), then V_s <- V_s W_s^dag (OrthoApplyKernel), which is the Gram-Schmidt result:
/// the Q of V_s = Q R with R = L_s^dag upper triangular with a positive diagonal. Each pass
/// reads the basis twice, where Gram-Schmidt vector by vector reads it O(nvec) times. Two
/// passes (the second sees G_s close to 1) make the basis as orthonormal as its storage
/// allows for any condition number up to about 1e7.
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

}  // namespace

void Transfer::orthonormalize() {
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const Backend be = fine_param_.backend;
  const MemoryKind mk = memory_for(be);
  const int n_agg = coarse_->volume_cb() * 2, n_seg = n_agg * 2;
  const int cpx = v_.front().site_reals() / 4;
  const int tiles = (nvec_ + ortho_tile - 1) / ortho_tile;
  Buffer gram(mk, static_cast<std::size_t>(nvec_) * nvec_ * n_seg * sizeof(Complex<double>));
  Buffer bad(mk, n_seg * sizeof(int));
  zero_bytes(bad.data(), bad.bytes(), mk, compute_stream());
  auto* gm = static_cast<Complex<double>*>(gram.data());
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto s) {
    using S = decltype(s);
    const OrthoGeometry<S> g{map, basis_view<S>(v_), n_agg, cpx};
    for (int pass = 0; pass < 2; ++pass) {
      const int n_tiles = tiles * (tiles + 1) / 2;
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
