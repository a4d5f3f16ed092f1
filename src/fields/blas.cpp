// Fused BLAS-1 kernels (blas.h). Compiled by nvcc in CUDA builds.
#include "src/fields/blas.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/work_counters.h"

namespace latke::blas {

bool mixed_precision_sets(const ColorSpinorField& f) { return f.site_reals() == 24 || f.site_reals() == 6; }

namespace {

/// f(S{}, NR, n): kernels over n "sites" of NR reals each. Wilson and staggered fields run
/// site by site (NR = 24 or 6, n = volume_cb); other shapes (multigrid coarse fields) in
/// single or double storage run over the block as a flat array of words (NR = reals per word),
/// which is the same elementwise arithmetic and a fixed summation order all the same.
template <typename F>
void dispatch(const ColorSpinorField& x, F&& f) {
  const int vcb = x.lattice().volume_cb();
  dispatch_precision(x.precision(), [&](auto s) {
    using S = decltype(s);
    switch (x.site_reals()) {
      case 24:
        f(S{}, std::integral_constant<int, 24>{}, vcb);
        break;
      case 6:
        f(S{}, std::integral_constant<int, 6>{}, vcb);
        break;
      default:
        if constexpr (sizeof(S) == 2) {
          fail("BLAS on half-precision fields with ", x.site_reals(), " reals per site: expected single or double");
        } else {
          constexpr int V = vector_length<S>(4);  // coarse fields have 4 Nvec reals per site
          require(x.site_reals() % V == 0, "BLAS on fields with ", x.site_reals(), " reals per site");
          f(S{}, std::integral_constant<int, V>{}, x.site_reals() / V * vcb);
        }
    }
  });
}

void require_alike(const ColorSpinorField& a, const ColorSpinorField& b, const char* what) {
  require(a.precision() == b.precision() && a.site_reals() == b.site_reals() && a.n_parity() == b.n_parity() &&
              a.backend() == b.backend() && a.lattice().volume_cb() == b.lattice().volume_cb(),
          what, ": fields differ in precision, shape, subset or backend (", to_string(a.precision()), " and ",
          to_string(b.precision()), ")");
}

/// f(integral_constant<int, NR>) with NR the reals per site of a Wilson (24) or staggered (6)
/// field, for the kernels that take only those.
template <typename F>
void dispatch_site_reals(const ColorSpinorField& x, F&& f) {
  if (x.site_reals() == 24)
    f(std::integral_constant<int, 24>{});
  else
    f(std::integral_constant<int, 6>{});
}

template <typename S, int NR>
SiteArray<S, NR, 1> arr(const ColorSpinorField& f, int block, int n) {
  SiteArray<S, NR, 1> s;
  s.data = static_cast<S*>(f.block_data(block));
  s.norm = f.block_norm(block);
  s.stride = n;
  return s;
}

template <typename S>
using compute_t = typename compute_type<S>::type;

/// z = a x + b y + c z (with y unused when b = 0 and has_y is false); optionally |z|^2.
template <typename S, int NR, bool HasY, bool Norm>
struct AxpbyzKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x, y, z;
  Complex<T> a, b, c;
  LATKE_HOST_DEVICE double operator()(int i, int) const {
    T u[NR], w[NR], v[NR];
    x.load(u, i);
    z.load(w, i);
    if constexpr (HasY) y.load(v, i);
    double n = 0;
    for (int k = 0; k < NR; k += 2) {
      const Complex<T> xk(u[k], u[k + 1]), zk(w[k], w[k + 1]);
      Complex<T> r = a * xk + c * zk;
      if constexpr (HasY) r += b * Complex<T>(v[k], v[k + 1]);
      w[k] = r.re;
      w[k + 1] = r.im;
      if constexpr (Norm) n += static_cast<double>(r.re) * r.re + static_cast<double>(r.im) * r.im;
    }
    z.save(w, i);
    return n;
  }
};

/// One MR step's updates on N reals (complex pairs) in compute type T: x += a r, r -= a s.
template <typename T, int N, typename U>
LATKE_HOST_DEVICE LATKE_INLINE void mr_step(Complex<T> a, U (&r)[N], const U (&s)[N], U (&x)[N]) {
  LATKE_UNROLL for (int k = 0; k < N; k += 2) {
    const Complex<T> rc(r[k], r[k + 1]);
    const Complex<T> xn = Complex<T>(x[k], x[k + 1]) + a * rc;
    const Complex<T> rn = rc - a * Complex<T>(s[k], s[k + 1]);
    x[k] = static_cast<U>(xn.re);
    x[k + 1] = static_cast<U>(xn.im);
    r[k] = static_cast<U>(rn.re);
    r[k + 1] = static_cast<U>(rn.im);
  }
}

/// The last MR step's update on N reals: x += a r (r is not needed after it).
template <typename T, int N, typename U>
LATKE_HOST_DEVICE LATKE_INLINE void mr_last_step(Complex<T> a, const U (&r)[N], U (&x)[N]) {
  LATKE_UNROLL for (int k = 0; k < N; k += 2) {
    const Complex<T> xn = Complex<T>(x[k], x[k + 1]) + a * Complex<T>(r[k], r[k + 1]);
    x[k] = static_cast<U>(xn.re);
    x[k + 1] = static_cast<U>(xn.im);
  }
}

/// MR coefficients of N fields given by the host ...
template <typename T, int N>
struct GivenCoefficients {
  Complex<T> a[N];
  LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator()(int k) const { return a[k]; }
};

/// ... or a_k = omega <s_k, r_k> / |s_k|^2 read from the sums a reduction left on the backend
/// (cdot_norms_to), in double as the host computes a given one; 0 where |s_k|^2 is not positive.
template <typename T>
struct SummedCoefficients {
  const DotNormSum* sums = nullptr;
  double omega = 1;
  LATKE_HOST_DEVICE LATKE_INLINE Complex<T> operator()(int k) const {
    const DotNormSum d = sums[k];
    if (!(d.xx > 0)) return Complex<T>(0, 0);
    return Complex<T>(static_cast<T>(omega * d.re / d.xx), static_cast<T>(omega * d.im / d.xx));
  }
};

/// One MR step at site i with coefficient a(0): x += a r, and r -= a s where UpdateR.
template <typename S, int NR, typename Coef, bool UpdateR>
struct MrUpdateKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> r, s, x;
  Coef a;
  LATKE_HOST_DEVICE double operator()(int i, int) const {
    T rv[NR], xv[NR];
    r.load(rv, i);
    x.load(xv, i);
    if constexpr (UpdateR) {
      T sv[NR];
      s.load(sv, i);
      mr_step(a(0), rv, sv, xv);
      r.save(rv, i);
    } else {
      mr_last_step(a(0), rv, xv);
    }
    x.save(xv, i);
    return 0;
  }
};

/// Launches the update as a plain kernel (return value ignored).
template <typename K>
struct AsVoid {
  K k;
  LATKE_HOST_DEVICE void operator()(int i, int p) const { (void)k(i, p); }
};

/// z += a x (+ b y), x and y stored in SX and z in SZ (at least as precise): the partial
/// solution accumulators of the mixed-precision solvers. Arithmetic in z's compute type.
template <typename SX, typename SZ, int NR, bool HasY>
struct AxpyPromoteKernel {
  using T = compute_t<SZ>;
  SiteArray<SX, NR, 1> x, y;
  SiteArray<SZ, NR, 1> z;
  Complex<T> a, b;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    T u[NR], v[NR], w[NR];
    x.load(u, i);
    if constexpr (HasY) y.load(v, i);
    z.load(w, i);
    for (int k = 0; k < NR; k += 2) {
      Complex<T> r = Complex<T>(w[k], w[k + 1]) + a * Complex<T>(u[k], u[k + 1]);
      if constexpr (HasY) r += b * Complex<T>(v[k], v[k + 1]);
      w[k] = r.re;
      w[k + 1] = r.im;
    }
    z.save(w, i);
  }
};

/// <u, v>, |u|^2 and |v|^2 of N reals (N / 2 complex numbers), summed in double.
template <typename T, int N>
LATKE_HOST_DEVICE LATKE_INLINE DotNormSum dot_norms(const T (&u)[N], const T (&v)[N]) {
  DotNormSum s;
  LATKE_UNROLL for (int k = 0; k < N; k += 2) {
    const double xr = u[k], xi = u[k + 1], yr = v[k], yi = v[k + 1];
    s.re += xr * yr + xi * yi;
    s.im += xr * yi - xi * yr;
    s.xx += xr * xr + xi * xi;
    s.yy += yr * yr + yi * yi;
  }
  return s;
}

template <typename S, int NR>
struct DotNormKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x, y;
  LATKE_HOST_DEVICE DotNormSum operator()(int i, int) const {
    T u[NR], v[NR];
    x.load(u, i);
    y.load(v, i);
    return dot_norms(u, v);
  }
};

/// A rank's sums of <x, y>, |x|^2, |y|^2 added over all ranks.
DotNorms over_ranks(const DotNormSum& local, MPI_Comm comm) {
  double out[4] = {local.re, local.im, local.xx, local.yy};
  global_sum(out, 4, comm);
  return {Cplx(out[0], out[1]), out[2], out[3]};
}

/// y = a x + b y, then <z, y>, |z|^2 and |y|^2 of the updated y (as computed, before storage).
template <typename S, int NR>
struct AxpbyDotKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x, y, z;
  Complex<T> a, b;
  LATKE_HOST_DEVICE DotNormSum operator()(int i, int) const {
    T u[NR], w[NR], v[NR];
    x.load(u, i);
    y.load(w, i);
    z.load(v, i);
    DotNormSum s;
    for (int k = 0; k < NR; k += 2) {
      const Complex<T> r = a * Complex<T>(u[k], u[k + 1]) + b * Complex<T>(w[k], w[k + 1]);
      w[k] = r.re;
      w[k + 1] = r.im;
      const double yr = r.re, yi = r.im, zr = v[k], zi = v[k + 1];
      s.re += zr * yr + zi * yi;
      s.im += zr * yi - zi * yr;
      s.xx += zr * zr + zi * zi;
      s.yy += yr * yr + yi * yi;
    }
    y.save(w, i);
    return s;
  }
};

template <bool HasY, bool Norm>
double axpbyz(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField* y, Cplx c, ColorSpinorField& z) {
  double norm = 0;
  dispatch(z, [&](auto s, auto nr, int n) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    for (int blk = 0; blk < z.n_parity(); ++blk) {
      AxpbyzKernel<S, NR, HasY, Norm> k;
      k.x = arr<S, NR>(x, blk, n);
      if (HasY) k.y = arr<S, NR>(*y, blk, n);
      k.z = arr<S, NR>(z, blk, n);
      k.a = Complex<T>(static_cast<T>(a.re), static_cast<T>(a.im));
      k.b = Complex<T>(static_cast<T>(b.re), static_cast<T>(b.im));
      k.c = Complex<T>(static_cast<T>(c.re), static_cast<T>(c.im));
      if constexpr (Norm)
        norm += launch_reduce<double>(z.backend(), k, {n});
      else
        launch(z.backend(), AsVoid<decltype(k)>{k}, {n}, compute_stream(), false);
    }
  });
  if constexpr (Norm) {
    double global = norm;
    global_sum(&global, 1, z.lattice().comm());
    return global;
  }
  return 0;
}

template <typename S>
constexpr int precision_rank() {
  return sizeof(S) == 8 ? 2 : sizeof(S) == 4 ? 1 : 0;
}

int precision_rank(Precision p) { return p == Precision::double_ ? 2 : p == Precision::single ? 1 : 0; }

/// z may be stored more precisely than x: of the same shape, subset and backend. In one
/// precision any shape (as every kernel here); in two, Wilson or staggered sites.
void require_accumulator(const ColorSpinorField& x, const ColorSpinorField& z, const char* what) {
  if (x.precision() == z.precision()) return require_alike(x, z, what);
  require(x.site_reals() == z.site_reals() && x.n_parity() == z.n_parity() && x.backend() == z.backend() &&
              x.lattice().volume_cb() == z.lattice().volume_cb(),
          what, ": fields differ in shape, subset or backend");
  require(precision_rank(z.precision()) >= precision_rank(x.precision()), what, ": the accumulator is in ",
          to_string(z.precision()), ", below its update's ", to_string(x.precision()));
  require(mixed_precision_sets(x), what, ": fields with ", x.site_reals(),
          " reals per site in two precisions: expected Wilson (24) or staggered (6) sites");
}

template <bool HasY>
void axpy_promote(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField* y, ColorSpinorField& z) {
  require_accumulator(x, z, HasY ? "caxpbypz_promote" : "caxpy_promote");
  if (x.precision() == z.precision()) {
    axpbyz<HasY, false>(a, x, b, y, Cplx(1), z);
    return;
  }
  const int n = x.lattice().volume_cb();
  dispatch_precision(x.precision(), [&](auto sx) {
    dispatch_precision(z.precision(), [&](auto sz) {
      using SX = decltype(sx);
      using SZ = decltype(sz);
      if constexpr (precision_rank<SZ>() > precision_rank<SX>()) {
        using T = compute_t<SZ>;
        auto run = [&](auto nr) {
          constexpr int NR = decltype(nr)::value;
          for (int blk = 0; blk < z.n_parity(); ++blk) {
            AxpyPromoteKernel<SX, SZ, NR, HasY> k;
            k.x = arr<SX, NR>(x, blk, n);
            if constexpr (HasY) k.y = arr<SX, NR>(*y, blk, n);
            k.z = arr<SZ, NR>(z, blk, n);
            k.a = Complex<T>(static_cast<T>(a.re), static_cast<T>(a.im));
            k.b = Complex<T>(static_cast<T>(b.re), static_cast<T>(b.im));
            launch(z.backend(), k, {n}, compute_stream(), false);
          }
        };
        dispatch_site_reals(x, run);
      }
    });
  });
}

template <int K>
struct MultiSum {
  double v[2 * K];
  LATKE_HOST_DEVICE MultiSum() {
    for (int i = 0; i < 2 * K; ++i) v[i] = 0;
  }
  LATKE_HOST_DEVICE MultiSum& operator+=(const MultiSum& o) {
    for (int i = 0; i < 2 * K; ++i) v[i] += o.v[i];
    return *this;
  }
};

/// <x_i, y> for the first n of K vectors, in one pass over y.
template <typename S, int NR>
struct MultiDotKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x[multi_chunk], y;
  int n;
  LATKE_HOST_DEVICE MultiSum<multi_chunk> operator()(int i, int) const {
    T v[NR];
    y.load(v, i);
    MultiSum<multi_chunk> s;
    for (int j = 0; j < n; ++j) {
      T u[NR];
      x[j].load(u, i);
      double re = 0, im = 0;
      for (int k = 0; k < NR; k += 2) {
        re += static_cast<double>(u[k]) * v[k] + static_cast<double>(u[k + 1]) * v[k + 1];
        im += static_cast<double>(u[k]) * v[k + 1] - static_cast<double>(u[k + 1]) * v[k];
      }
      s.v[2 * j] = re;
      s.v[2 * j + 1] = im;
    }
    return s;
  }
};

/// <x_i, y> and <x_i, z> for the first n of K / 2 vectors, in one pass over y and z: entries
/// 2 i and 2 i + 1 of the sum.
template <typename S, int NR>
struct MultiDotPairKernel {
  using T = compute_t<S>;
  static constexpr int K = multi_chunk / 2;
  SiteArray<S, NR, 1> x[K], y, z;
  int n;
  LATKE_HOST_DEVICE MultiSum<multi_chunk> operator()(int i, int) const {
    T v[NR], w[NR];
    y.load(v, i);
    z.load(w, i);
    MultiSum<multi_chunk> s;
    for (int j = 0; j < n; ++j) {
      T u[NR];
      x[j].load(u, i);
      double re = 0, im = 0, re2 = 0, im2 = 0;
      for (int k = 0; k < NR; k += 2) {
        const double a = u[k], b = u[k + 1];
        re += a * v[k] + b * v[k + 1];
        im += a * v[k + 1] - b * v[k];
        re2 += a * w[k] + b * w[k + 1];
        im2 += a * w[k + 1] - b * w[k];
      }
      s.v[4 * j] = re;
      s.v[4 * j + 1] = im;
      s.v[4 * j + 2] = re2;
      s.v[4 * j + 3] = im2;
    }
    return s;
  }
};

/// y += sum a_j x_j for the first n vectors; x stored in S, y in SY (as precise or more), the
/// arithmetic in y's compute type.
template <typename S, int NR, typename SY = S>
struct MultiAxpyKernel {
  using T = compute_t<SY>;
  SiteArray<S, NR, 1> x[multi_chunk];
  SiteArray<SY, NR, 1> y;
  Complex<T> a[multi_chunk];
  int n;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    T v[NR];
    y.load(v, i);
    for (int j = 0; j < n; ++j) {
      T u[NR];
      x[j].load(u, i);
      for (int k = 0; k < NR; k += 2) {
        v[k] += a[j].re * u[k] - a[j].im * u[k + 1];
        v[k + 1] += a[j].re * u[k + 1] + a[j].im * u[k];
      }
    }
    y.save(v, i);
  }
};

/// x_k += alpha_k p_k; p_k = zeta_k r + beta_k p_k for k < n (n <= multishift_max).
template <typename S, typename SX, int NR>
struct MultiShiftKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> r, p[multishift_max];
  SiteArray<SX, NR, 1> x[multishift_max];
  compute_t<SX> alpha[multishift_max];  // in the solutions' arithmetic
  T zeta[multishift_max], beta[multishift_max];
  int n = 0;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    T rv[NR];
    r.load(rv, i);
    for (int k = 0; k < n; ++k) {
      compute_t<SX> xv[NR];
      T pv[NR];
      x[k].load(xv, i);
      p[k].load(pv, i);
      for (int j = 0; j < NR; ++j) {
        xv[j] += alpha[k] * pv[j];
        pv[j] = zeta[k] * rv[j] + beta[k] * pv[j];
      }
      x[k].save(xv, i);
      p[k].save(pv, i);
    }
  }
};

/// A set of fields (make_set) as one flat array of words of V reals: field k's n_words words
/// start at data + k n_words V. Elementwise arithmetic and sums do not depend on the layout of
/// sites inside a field, and all fields of one call share it.
template <typename S>
struct FlatSet {
  static constexpr int V = 16 / sizeof(S);
  S* data = nullptr;
  int n_words = 0;
  LATKE_HOST_DEVICE LATKE_INLINE Vector<S, V>& word(int k, int i) const {
    return reinterpret_cast<Vector<S, V>*>(data)[static_cast<long>(k) * n_words + i];
  }
};

/// z_k = a_k x_k + b_k y_k + c_k z_k on word i of field k; returns its |z|^2 (Norm).
template <typename S, bool HasY, bool Norm>
struct SetAxpbyzTerm {
  using T = compute_t<S>;
  static constexpr int V = FlatSet<S>::V;
  FlatSet<S> x, y, z;
  Complex<T> a[set_max], b[set_max], c[set_max];
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    const Vector<S, V> u = x.word(k, i);
    Vector<S, V>& w = z.word(k, i);
    Vector<S, V> v{};
    if constexpr (HasY) v = y.word(k, i);
    double n = 0;
    Vector<S, V> out;
    LATKE_UNROLL for (int j = 0; j < V; j += 2) {
      Complex<T> r = a[k] * Complex<T>(u.v[j], u.v[j + 1]) + c[k] * Complex<T>(w.v[j], w.v[j + 1]);
      if constexpr (HasY) r += b[k] * Complex<T>(v.v[j], v.v[j + 1]);
      out.v[j] = static_cast<S>(r.re);
      out.v[j + 1] = static_cast<S>(r.im);
      if constexpr (Norm) n += static_cast<double>(r.re) * r.re + static_cast<double>(r.im) * r.im;
    }
    w = out;
    return n;
  }
};

template <typename Term>
struct SetAsKernel {
  Term t;
  int n_words;
  LATKE_HOST_DEVICE void operator()(int idx, int) const { (void)t(idx / n_words, idx % n_words); }
};

/// y_l = (first ? 0 : y_l) + sum_j a[j][l] x_j for j < n (<= multi_chunk) and l < m (<=
/// combine_chunk) at word i (combine_multi): the x words stay in registers for every output.
template <typename S>
struct CombineTerm {
  using T = compute_t<S>;
  static constexpr int V = FlatSet<S>::V;
  FlatSet<S> x[multi_chunk], y[combine_chunk];
  Complex<T> a[multi_chunk][combine_chunk];
  int n = 0, m = 0;
  bool first = false;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    Vector<S, V> u[multi_chunk] = {};
    LATKE_UNROLL for (int j = 0; j < multi_chunk; ++j) if (j < n) u[j] = x[j].word(0, i);
    for (int l = 0; l < m; ++l) {
      Vector<S, V>& w = y[l].word(0, i);
      T acc[V];
      LATKE_UNROLL for (int c = 0; c < V; ++c) acc[c] = first ? T(0) : static_cast<T>(w.v[c]);
      LATKE_UNROLL for (int j = 0; j < multi_chunk; ++j) {
        if (j >= n) break;
        const Complex<T> f = a[j][l];
        LATKE_UNROLL for (int c = 0; c < V; c += 2) {
          acc[c] += f.re * u[j].v[c] - f.im * u[j].v[c + 1];
          acc[c + 1] += f.re * u[j].v[c + 1] + f.im * u[j].v[c];
        }
      }
      Vector<S, V> out;
      LATKE_UNROLL for (int c = 0; c < V; ++c) out.v[c] = static_cast<S>(acc[c]);
      w = out;
    }
  }
};

template <typename S>
struct SetDotNormTerm {
  static constexpr int V = FlatSet<S>::V;
  FlatSet<S> x, y;
  LATKE_HOST_DEVICE DotNormSum operator()(int k, int i) const {
    const Vector<S, V> u = x.word(k, i), v = y.word(k, i);
    return dot_norms(u.v, v.v);
  }
};

/// A set of Wilson or staggered fields (make_set) site by site, for what the flat words cannot
/// do: half precision (a norm per site) and an accumulator more precise than the update. Field
/// k's block b holds NR vcb reals from data + (k n_parity + b) NR vcb, its norms vcb from
/// norm + (k n_parity + b) vcb. Index i of a field: block i / vcb, site i % vcb.
template <typename S, int NR>
struct SiteSet {
  S* data = nullptr;
  float* norm = nullptr;
  int vcb = 0, n_parity = 1;
  LATKE_HOST_DEVICE LATKE_INLINE SiteArray<S, NR, 1> at(int k, int blk) const {
    const long b = static_cast<long>(k) * n_parity + blk;
    SiteArray<S, NR, 1> a;
    a.data = data + b * NR * vcb;
    a.norm = norm ? norm + b * vcb : nullptr;
    a.stride = vcb;
    return a;
  }
};

/// z_k = a_k x_k + b_k y_k + c_k z_k at index i of field k, x and y stored in SX, z in SZ (as
/// precise or more); arithmetic in z's compute type; returns |z|^2 as computed (Norm).
template <typename SX, typename SZ, int NR, bool HasY, bool Norm>
struct SetSiteAxpbyzTerm {
  using T = compute_t<SZ>;
  SiteSet<SX, NR> x, y;
  SiteSet<SZ, NR> z;
  Complex<T> a[set_max], b[set_max], c[set_max];
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    const int blk = i / z.vcb, site = i - blk * z.vcb;
    T u[NR], w[NR], v[NR];
    x.at(k, blk).load(u, site);
    const SiteArray<SZ, NR, 1> zk = z.at(k, blk);
    zk.load(w, site);
    if constexpr (HasY) y.at(k, blk).load(v, site);
    double n = 0;
    LATKE_UNROLL for (int j = 0; j < NR; j += 2) {
      Complex<T> r = a[k] * Complex<T>(u[j], u[j + 1]) + c[k] * Complex<T>(w[j], w[j + 1]);
      if constexpr (HasY) r += b[k] * Complex<T>(v[j], v[j + 1]);
      w[j] = r.re;
      w[j + 1] = r.im;
      if constexpr (Norm) n += static_cast<double>(r.re) * r.re + static_cast<double>(r.im) * r.im;
    }
    zk.save(w, site);
    return n;
  }
};

/// One MR step at index i of field k with coefficient a(k): x_k += a r_k, and r_k -= a s_k
/// where UpdateR (flat words); XZero: x starts at zero and is not read; Into: into_k += the new
/// x_k, and x_k is not written (MrSetEnds).
template <typename S, typename Coef, bool UpdateR, bool XZero = false, bool Into = false>
struct SetMrTerm {
  using T = compute_t<S>;
  static constexpr int V = FlatSet<S>::V;
  FlatSet<S> r, s, x, into;
  Coef a;
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    Vector<S, V>& rw = r.word(k, i);
    Vector<S, V> ru = rw, xu;
    if constexpr (XZero) {
      LATKE_UNROLL for (int q = 0; q < V; ++q) xu.v[q] = S(0);
    } else {
      xu = x.word(k, i);
    }
    if constexpr (UpdateR) {
      const Vector<S, V> su = s.word(k, i);
      mr_step<T>(a(k), ru.v, su.v, xu.v);
      rw = ru;
    } else {
      mr_last_step<T>(a(k), ru.v, xu.v);
    }
    if constexpr (Into) {
      Vector<S, V>& iw = into.word(k, i);
      Vector<S, V> iu = iw;
      LATKE_UNROLL for (int q = 0; q < V; ++q) iu.v[q] += xu.v[q];
      iw = iu;
    } else {
      x.word(k, i) = xu;
    }
    return 0;
  }
};

/// The same site by site (half precision: a norm per site; or an `into` stored more precisely
/// than x, in SI).
template <typename S, int NR, typename Coef, bool UpdateR, bool XZero = false, bool Into = false, typename SI = S>
struct SetSiteMrTerm {
  using T = compute_t<S>;
  SiteSet<S, NR> r, s, x;
  SiteSet<SI, NR> into;
  Coef a;
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    const int blk = i / r.vcb, site = i - blk * r.vcb;
    T rv[NR], xv[NR];
    const SiteArray<S, NR, 1> rk = r.at(k, blk), xk = x.at(k, blk);
    rk.load(rv, site);
    if constexpr (XZero) {
      LATKE_UNROLL for (int j = 0; j < NR; ++j) xv[j] = T(0);
    } else {
      xk.load(xv, site);
    }
    if constexpr (UpdateR) {
      T sv[NR];
      s.at(k, blk).load(sv, site);
      mr_step(a(k), rv, sv, xv);
      rk.save(rv, site);
    } else {
      mr_last_step(a(k), rv, xv);
    }
    if constexpr (Into) {
      using TI = compute_t<SI>;
      const SiteArray<SI, NR, 1> ik = into.at(k, blk);
      TI iv[NR];
      ik.load(iv, site);
      LATKE_UNROLL for (int j = 0; j < NR; ++j) iv[j] += static_cast<TI>(xv[j]);
      ik.save(iv, site);
    } else {
      xk.save(xv, site);
    }
    return 0;
  }
};

/// w_k = a_k x_k + b_k y_k at index i of field k (caxpby_set_to): x and y stored in SX, w in
/// SW; arithmetic in the compute type of the more precise.
template <typename SX, typename SW, int NR>
struct SetSiteAxpbyToTerm {
  using T = std::conditional_t<(precision_rank<SW>() > precision_rank<SX>()), compute_t<SW>, compute_t<SX>>;
  SiteSet<SX, NR> x, y;
  SiteSet<SW, NR> w;
  Complex<T> a[set_max], b[set_max];
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    const int blk = i / w.vcb, site = i - blk * w.vcb;
    T u[NR], v[NR];
    x.at(k, blk).load(u, site);
    y.at(k, blk).load(v, site);
    LATKE_UNROLL for (int j = 0; j < NR; j += 2) {
      const Complex<T> o = a[k] * Complex<T>(u[j], u[j + 1]) + b[k] * Complex<T>(v[j], v[j + 1]);
      u[j] = o.re;
      u[j + 1] = o.im;
    }
    w.at(k, blk).save(u, site);
    return 0;
  }
};

template <typename S, int NR>
struct SetSiteDotNormTerm {
  SiteSet<S, NR> x, y;
  LATKE_HOST_DEVICE DotNormSum operator()(int k, int i) const {
    const int blk = i / x.vcb, site = i - blk * x.vcb;
    using T = compute_t<S>;
    T u[NR], v[NR];
    x.at(k, blk).load(u, site);
    y.at(k, blk).load(v, site);
    return dot_norms(u, v);
  }
};

/// Gram-Schmidt products over a set of systems (cdot_multi_pair_set): <x_j[k], y[k]> and
/// <x_j[k], z[k]> for the first n of multi_chunk / 2 direction sets x_j at word i of field k
/// (entries 4 j to 4 j + 3 of the sum); a field outside `active` adds nothing and reads nothing.
template <typename S>
struct SetMultiDotPairTerm {
  static constexpr int V = FlatSet<S>::V, K = multi_chunk / 2;
  FlatSet<S> x[K], y, z;
  int n = 0;
  unsigned active = 0;
  LATKE_HOST_DEVICE MultiSum<multi_chunk> operator()(int k, int i) const {
    MultiSum<multi_chunk> s;
    if (!((active >> k) & 1u)) return s;
    const Vector<S, V> v = y.word(k, i), w = z.word(k, i);
    // Unrolled to the bound, so that the sums stay in registers (not local memory).
    LATKE_UNROLL for (int j = 0; j < K; ++j) {
      if (j >= n) break;
      const Vector<S, V> u = x[j].word(k, i);
      double re = 0, im = 0, re2 = 0, im2 = 0;
      LATKE_UNROLL for (int c = 0; c < V; c += 2) {
        const double a = u.v[c], b = u.v[c + 1];
        re += a * v.v[c] + b * v.v[c + 1];
        im += a * v.v[c + 1] - b * v.v[c];
        re2 += a * w.v[c] + b * w.v[c + 1];
        im2 += a * w.v[c + 1] - b * w.v[c];
      }
      s.v[4 * j] = re;
      s.v[4 * j + 1] = im;
      s.v[4 * j + 2] = re2;
      s.v[4 * j + 3] = im2;
    }
    return s;
  }
};

/// y[k] += sum_j a[k][j] x_j[k] for the first n of multi_chunk direction sets, at word i of
/// field k (caxpy_multi_set); a field outside `active` is left alone.
template <typename S>
struct SetMultiAxpyTerm {
  using T = compute_t<S>;
  static constexpr int V = FlatSet<S>::V;
  FlatSet<S> x[multi_chunk], y;
  Complex<T> a[set_max][multi_chunk];
  int n = 0;
  unsigned active = 0;
  LATKE_HOST_DEVICE double operator()(int k, int i) const {
    if (!((active >> k) & 1u)) return 0;
    Vector<S, V>& yw = y.word(k, i);
    Vector<S, V> v = yw;
    LATKE_UNROLL for (int j = 0; j < multi_chunk; ++j) {
      if (j >= n) break;
      const Vector<S, V> u = x[j].word(k, i);
      const Complex<T> c = a[k][j];
      LATKE_UNROLL for (int q = 0; q < V; q += 2) {
        const T ur = u.v[q], ui = u.v[q + 1];
        v.v[q] += c.re * ur - c.im * ui;
        v.v[q + 1] += c.re * ui + c.im * ur;
      }
    }
    yw = v;
    return 0;
  }
};

/// Two sets' sizes checked, and that `set` is laid out as make_set lays it out (`like` may be in
/// another precision: an accumulator).
void require_sets(const std::vector<ColorSpinorField>& set, const std::vector<ColorSpinorField>& like,
                  const char* what) {
  require(!set.empty() && set.size() == like.size() && set.size() <= static_cast<std::size_t>(set_max), what,
          ": sets of ", set.size(), " and ", like.size(), " fields; expected equal sizes from 1 to ", set_max);
  require(is_set(set), what, ": the fields are not a set made by make_set");
}

/// `set` checked against `like` (require_sets) and seen site by site.
template <typename S, int NR>
SiteSet<S, NR> site_set(const std::vector<ColorSpinorField>& set, const std::vector<ColorSpinorField>& like,
                        const char* what) {
  require_sets(set, like, what);
  SiteSet<S, NR> f;
  f.data = static_cast<S*>(set[0].block_data(0));
  f.norm = set[0].block_norm(0);
  f.vcb = set[0].lattice().volume_cb();
  f.n_parity = set[0].n_parity();
  return f;
}

/// Whether a set operation runs site by site: half precision, or z (the accumulator) stored
/// more precisely than x. Only Wilson (24 reals per site) and staggered (6) sets.
bool site_path(const ColorSpinorField& x, const ColorSpinorField& z, const char* what) {
  if (x.precision() != Precision::half && z.precision() == x.precision()) return false;
  require(mixed_precision_sets(x), what, ": a set in half precision or with an accumulator of ", x.site_reals(),
          " reals per site: expected Wilson (24) or staggered (6) fields");
  return true;
}

/// A single or double field as one run of 16-byte words (its parity blocks lie one after the
/// other), the first of a flat set.
template <typename S>
FlatSet<S> flat_field(const ColorSpinorField& f, const char* what) {
  const std::size_t field_bytes = f.n_parity() * f.block_bytes();
  require(field_bytes % 16 == 0, what, ": fields of ", field_bytes, " bytes; expected a multiple of 16");
  FlatSet<S> w;
  w.data = static_cast<S*>(f.block_data(0));
  w.n_words = static_cast<int>(field_bytes / 16);
  return w;
}

/// The sets' shape checked (one shape, single or double, make_set's layout, at most set_max
/// fields) and field 0 as a flat set.
template <typename S>
FlatSet<S> flat(const std::vector<ColorSpinorField>& set, const std::vector<ColorSpinorField>& like, const char* what) {
  require_sets(set, like, what);
  require_alike(set[0], like[0], what);
  return flat_field<S>(set[0], what);
}

template <typename F>
void dispatch_set(const ColorSpinorField& f, F&& fn) {
  if (f.precision() == Precision::double_)
    fn(double{});
  else
    fn(float{});
}

}  // namespace

void cdot_multi(const ColorSpinorField* const* x, int n, const ColorSpinorField& y, Cplx* out) {
  for (int j = 0; j < n; ++j) require_alike(*x[j], y, "cdot_multi");
  std::vector<double> local(2 * n, 0.0), global(2 * n);
  dispatch(y, [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    for (int j0 = 0; j0 < n; j0 += multi_chunk) {
      const int m = std::min(multi_chunk, n - j0);
      for (int blk = 0; blk < y.n_parity(); ++blk) {
        MultiDotKernel<S, NR> k;
        for (int j = 0; j < m; ++j) k.x[j] = arr<S, NR>(*x[j0 + j], blk, sites);
        k.y = arr<S, NR>(y, blk, sites);
        k.n = m;
        const MultiSum<multi_chunk> r = launch_reduce<MultiSum<multi_chunk>>(y.backend(), k, {sites});
        for (int j = 0; j < 2 * m; ++j) local[2 * j0 + j] += r.v[j];
      }
    }
  });
  global = local;
  global_sum(global.data(), 2 * n, y.lattice().comm());
  for (int j = 0; j < n; ++j) out[j] = Cplx(global[2 * j], global[2 * j + 1]);
}

void cdot_multi_pair(const ColorSpinorField* const* x, int n, const ColorSpinorField& y, const ColorSpinorField& z,
                     Cplx* xy, Cplx* xz) {
  require_alike(y, z, "cdot_multi_pair");
  for (int j = 0; j < n; ++j) require_alike(*x[j], y, "cdot_multi_pair");
  constexpr int K = multi_chunk / 2;
  std::vector<double> sums(4 * static_cast<std::size_t>(n), 0.0);
  dispatch(y, [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    for (int j0 = 0; j0 < n; j0 += K) {
      const int m = std::min(K, n - j0);
      for (int blk = 0; blk < y.n_parity(); ++blk) {
        MultiDotPairKernel<S, NR> k;
        for (int j = 0; j < m; ++j) k.x[j] = arr<S, NR>(*x[j0 + j], blk, sites);
        k.y = arr<S, NR>(y, blk, sites);
        k.z = arr<S, NR>(z, blk, sites);
        k.n = m;
        const MultiSum<multi_chunk> r = launch_reduce<MultiSum<multi_chunk>>(y.backend(), k, {sites});
        for (int j = 0; j < 4 * m; ++j) sums[4 * static_cast<std::size_t>(j0) + j] += r.v[j];
      }
    }
  });
  global_sum(sums.data(), 4 * n, y.lattice().comm());
  for (int j = 0; j < n; ++j) {
    xy[j] = Cplx(sums[4 * j], sums[4 * j + 1]);
    xz[j] = Cplx(sums[4 * j + 2], sums[4 * j + 3]);
  }
}

void caxpy_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField& y) {
  if (n == 0) return;
  for (int j = 0; j < n; ++j) {
    require_accumulator(*x[j], y, "caxpy_multi");
    require_alike(*x[j], *x[0], "caxpy_multi");
  }
  dispatch(*x[0], [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    auto run = [&](auto sy) {
      using SY = decltype(sy);
      using T = compute_t<SY>;
      for (int j0 = 0; j0 < n; j0 += multi_chunk) {
        const int m = std::min(multi_chunk, n - j0);
        for (int blk = 0; blk < y.n_parity(); ++blk) {
          MultiAxpyKernel<S, NR, SY> k;
          for (int j = 0; j < m; ++j) {
            k.x[j] = arr<S, NR>(*x[j0 + j], blk, sites);
            k.a[j] = Complex<T>(static_cast<T>(a[j0 + j].re), static_cast<T>(a[j0 + j].im));
          }
          k.y = arr<SY, NR>(y, blk, sites);
          k.n = m;
          launch(y.backend(), k, {sites}, compute_stream(), false);
        }
      }
    };
    // y as precise as x or more (checked above; more only on Wilson or staggered sites).
    dispatch_precision(y.precision(), [&](auto sy) {
      using SY = decltype(sy);
      if constexpr (std::is_same_v<SY, S> || ((NR == 24 || NR == 6) && precision_rank<SY>() > precision_rank<S>()))
        run(sy);
    });
  });
}

bool multi_set_forms(const ColorSpinorField& f) {
  return f.precision() == Precision::double_ || f.precision() == Precision::single;
}

void cdot_multi_pair_set(const std::vector<ColorSpinorField>* const* x, int n, const std::vector<ColorSpinorField>& y,
                         const std::vector<ColorSpinorField>& z, unsigned active, Cplx* xy, Cplx* xz) {
  constexpr const char* what = "cdot_multi_pair_set";
  const int count = static_cast<int>(y.size());
  require_sets(z, y, what);
  require(multi_set_forms(y[0]), what, ": sets in ", to_string(y[0].precision()), "; expected single or double");
  for (int j = 0; j < n; ++j) require_alike((*x[j])[0], y[0], what);
  constexpr int K = multi_chunk / 2;
  std::vector<double> sums(4 * static_cast<std::size_t>(count) * n, 0.0);  // [k][i][4]
  std::vector<MultiSum<multi_chunk>> part(count);
  dispatch_set(y[0], [&](auto s) {
    using S = decltype(s);
    for (int j0 = 0; j0 < n; j0 += K) {
      SetMultiDotPairTerm<S> t;
      t.n = std::min(K, n - j0);
      for (int j = 0; j < t.n; ++j) t.x[j] = flat<S>(*x[j0 + j], y, what);
      t.y = flat<S>(y, y, what);
      t.z = flat<S>(z, y, what);
      t.active = active;
      launch_segmented_reduce_host<MultiSum<multi_chunk>>(y[0].backend(), t, count, t.y.n_words, part.data());
      for (int k = 0; k < count; ++k)
        for (int q = 0; q < 4 * t.n; ++q) sums[(static_cast<std::size_t>(k) * n + j0) * 4 + q] = part[k].v[q];
    }
  });
  global_sum(sums.data(), static_cast<int>(sums.size()), y[0].lattice().comm());
  for (int k = 0; k < count; ++k)
    for (int i = 0; i < n; ++i) {
      const double* v = &sums[(static_cast<std::size_t>(k) * n + i) * 4];
      xy[k * n + i] = Cplx(v[0], v[1]);
      xz[k * n + i] = Cplx(v[2], v[3]);
    }
}

void caxpy_multi_set(const Cplx* a, const std::vector<ColorSpinorField>* const* x, int n,
                     std::vector<ColorSpinorField>& y, unsigned active) {
  constexpr const char* what = "caxpy_multi_set";
  if (n == 0) return;
  const int count = static_cast<int>(y.size());
  require(count <= set_max, what, ": ", count, " fields; at most ", set_max);
  require(multi_set_forms(y[0]), what, ": sets in ", to_string(y[0].precision()), "; expected single or double");
  for (int j = 0; j < n; ++j) require_alike((*x[j])[0], y[0], what);
  dispatch_set(y[0], [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    for (int j0 = 0; j0 < n; j0 += multi_chunk) {
      SetMultiAxpyTerm<S> t;
      t.n = std::min(multi_chunk, n - j0);
      for (int j = 0; j < t.n; ++j) t.x[j] = flat<S>(*x[j0 + j], y, what);
      t.y = flat<S>(y, y, what);
      t.active = active;
      for (int k = 0; k < count; ++k)
        for (int j = 0; j < t.n; ++j) {
          const Cplx c = a[k * n + j0 + j];
          t.a[k][j] = Complex<T>(static_cast<T>(c.re), static_cast<T>(c.im));
        }
      launch(y[0].backend(), SetAsKernel<SetMultiAxpyTerm<S>>{t, t.y.n_words}, {count * t.y.n_words}, compute_stream(),
             false);
    }
  });
}

void combine_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField* const* y, int m) {
  constexpr const char* what = "combine_multi";
  if (m == 0) return;
  require(n >= 1, what, ": ", m, " combinations of no vectors");
  for (int l = 0; l < m; ++l) {
    require_alike(*y[l], *x[0], what);
    for (int j = 0; j < n; ++j) require(y[l] != x[j], what, ": output ", l, " is input ", j);
  }
  for (int j = 0; j < n; ++j) require_alike(*x[j], *x[0], what);
  if (!multi_set_forms(*x[0])) {  // half: its norms; output by output
    for (int l = 0; l < m; ++l) {
      y[l]->zero();
      caxpy_multi(a + static_cast<std::size_t>(l) * n, x, n, *y[l]);
    }
    return;
  }
  dispatch_set(*x[0], [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const int n_words = flat_field<S>(*x[0], what).n_words;
    for (int l0 = 0; l0 < m; l0 += combine_chunk)
      for (int j0 = 0; j0 < n; j0 += multi_chunk) {
        CombineTerm<S> t;
        t.n = std::min(multi_chunk, n - j0);
        t.m = std::min(combine_chunk, m - l0);
        t.first = j0 == 0;
        for (int j = 0; j < t.n; ++j) t.x[j] = flat_field<S>(*x[j0 + j], what);
        for (int l = 0; l < t.m; ++l) {
          t.y[l] = flat_field<S>(*y[l0 + l], what);
          for (int j = 0; j < t.n; ++j) {
            const Cplx c = a[static_cast<std::size_t>(l0 + l) * n + j0 + j];
            t.a[j][l] = Complex<T>(static_cast<T>(c.re), static_cast<T>(c.im));
          }
        }
        launch(x[0]->backend(), t, {n_words}, compute_stream(), false);
      }
  });
}

void multishift_update(const ColorSpinorField& r, const std::vector<ColorSpinorField*>& x,
                       const std::vector<ColorSpinorField*>& p, const std::vector<double>& alpha,
                       const std::vector<double>& zeta, const std::vector<double>& beta) {
  const std::size_t n = x.size();
  require(p.size() == n && alpha.size() == n && zeta.size() == n && beta.size() == n, "multishift_update: ", n,
          " solutions but ", p.size(), " directions and ", alpha.size(), ", ", zeta.size(), ", ", beta.size(),
          " coefficients");
  for (std::size_t k = 0; k < n; ++k) {
    require(x[k] && p[k] && x[k] != p[k], "multishift_update: shift ", k, " needs two distinct fields");
    require_alike(r, *p[k], "multishift_update");
    require_accumulator(r, *x[k], "multishift_update");
    require(x[k]->precision() == x[0]->precision(), "multishift_update: the solutions differ in precision (",
            to_string(x[0]->precision()), " and ", to_string(x[k]->precision()), ")");
  }
  if (n == 0) return;
  dispatch(r, [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    dispatch_precision(x[0]->precision(), [&](auto sx) {
      using SX = decltype(sx);
      if constexpr (precision_rank<SX>() >= precision_rank<S>()) {  // (checked above)
        for (std::size_t k0 = 0; k0 < n; k0 += multishift_max)
          for (int blk = 0; blk < r.n_parity(); ++blk) {
            MultiShiftKernel<S, SX, NR> k;
            k.r = arr<S, NR>(r, blk, sites);
            k.n = static_cast<int>(std::min<std::size_t>(multishift_max, n - k0));
            for (int j = 0; j < k.n; ++j) {
              k.x[j] = arr<SX, NR>(*x[k0 + j], blk, sites);
              k.p[j] = arr<S, NR>(*p[k0 + j], blk, sites);
              k.alpha[j] = static_cast<compute_t<SX>>(alpha[k0 + j]);
              k.zeta[j] = static_cast<T>(zeta[k0 + j]);
              k.beta[j] = static_cast<T>(beta[k0 + j]);
            }
            launch(r.backend(), k, {sites}, compute_stream(), false);
          }
      }
    });
  });
}

void caxpy_promote(Cplx a, const ColorSpinorField& x, ColorSpinorField& z) { axpy_promote<false>(a, x, Cplx(), nullptr, z); }

void caxpbypz_promote(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField& y, ColorSpinorField& z) {
  require_alike(x, y, "caxpbypz_promote");
  axpy_promote<true>(a, x, b, &y, z);
}

void caxpby(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y) {
  require_alike(x, y, "caxpby");
  axpbyz<false, false>(a, x, Cplx(), nullptr, b, y);
}

namespace {

/// The MR update of one field, with the coefficient source coef(T{}) (GivenCoefficients or
/// SummedCoefficients).
template <bool UpdateR, typename MakeCoef>
void mr_update_with(ColorSpinorField& r, const ColorSpinorField& s, ColorSpinorField& x, MakeCoef coef,
                    const char* what) {
  require_alike(r, x, what);
  require_alike(s, x, what);
  dispatch(x, [&](auto sp, auto nr, int n) {
    using S = decltype(sp);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    for (int blk = 0; blk < x.n_parity(); ++blk) {
      MrUpdateKernel<S, NR, decltype(coef(T{})), UpdateR> k;
      k.r = arr<S, NR>(r, blk, n);
      k.s = arr<S, NR>(s, blk, n);
      k.x = arr<S, NR>(x, blk, n);
      k.a = coef(T{});
      launch(x.backend(), AsVoid<decltype(k)>{k}, {n}, compute_stream(), false);
    }
  });
}

/// A one-rank lattice's field, for the reductions whose sums stay on the backend.
void require_one_rank(const ColorSpinorField& x, const char* what) {
  require(x.lattice().size() == 1, what, ": the sums stay on the device, but the lattice ", x.lattice().describe(),
          " is spread over ", x.lattice().size(), " ranks (a global sum needs the host)");
}

/// <x, y>, |x|^2, |y|^2 over a field's n_parity blocks of n sites as one segment.
template <typename S, int NR>
struct DotNormBlocksTerm {
  SiteArray<S, NR, 1> x[2], y[2];
  int n = 0;
  LATKE_HOST_DEVICE DotNormSum operator()(int, int i) const {
    using T = compute_t<S>;
    const int b = i < n ? 0 : 1, site = i - b * n;
    T u[NR], v[NR];
    x[b].load(u, site);
    y[b].load(v, site);
    return dot_norms(u, v);
  }
};

}  // namespace

void mr_update(Cplx a, ColorSpinorField& r, const ColorSpinorField& s, ColorSpinorField& x) {
  mr_update_with<true>(
      r, s, x,
      [a](auto t) {
        using T = decltype(t);
        return GivenCoefficients<T, 1>{{Complex<T>(static_cast<T>(a.re), static_cast<T>(a.im))}};
      },
      "mr_update");
}

void cdot_norms_to(const ColorSpinorField& x, const ColorSpinorField& y, DotNormSum* sums) {
  require_alike(x, y, "cdot_norms_to");
  require_one_rank(x, "cdot_norms_to");
  dispatch(x, [&](auto s, auto nr, int n) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    DotNormBlocksTerm<S, NR> t;
    for (int blk = 0; blk < x.n_parity(); ++blk) t.x[blk] = arr<S, NR>(x, blk, n), t.y[blk] = arr<S, NR>(y, blk, n);
    t.n = n;
    launch_segmented_reduce<DotNormSum>(x.backend(), t, 1, n * x.n_parity(), sums);
  });
}

void mr_update_from(double omega, const DotNormSum* sums, ColorSpinorField& r, const ColorSpinorField& s,
                    ColorSpinorField& x, bool update_r) {
  require_one_rank(x, "mr_update_from");
  const auto coef = [&](auto t) { return SummedCoefficients<decltype(t)>{sums, omega}; };
  if (update_r)
    mr_update_with<true>(r, s, x, coef, "mr_update_from");
  else
    mr_update_with<false>(r, s, x, coef, "mr_update_from");
}

double caxpby_norm(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y) {
  require_alike(x, y, "caxpby_norm");
  return axpbyz<false, true>(a, x, Cplx(), nullptr, b, y);
}

void caxpbypcz(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField& y, Cplx c, ColorSpinorField& z) {
  require_alike(x, z, "caxpbypcz");
  require_alike(y, z, "caxpbypcz");
  axpbyz<true, false>(a, x, b, &y, c, z);
}

DotNorms cdot_norms(const ColorSpinorField& x, const ColorSpinorField& y) {
  require_alike(x, y, "cdot_norms");
  DotNormSum local;
  dispatch(x, [&](auto s, auto nr, int n) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    for (int blk = 0; blk < x.n_parity(); ++blk)
      local += launch_reduce<DotNormSum>(x.backend(),
                                         DotNormKernel<S, NR>{arr<S, NR>(x, blk, n), arr<S, NR>(y, blk, n)}, {n});
  });
  return over_ranks(local, x.lattice().comm());
}

DotNorms caxpby_cdot_norms(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y, const ColorSpinorField& z) {
  require_alike(x, y, "caxpby_cdot_norms");
  require_alike(z, y, "caxpby_cdot_norms");
  DotNormSum local;
  dispatch(y, [&](auto s, auto nr, int n) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    for (int blk = 0; blk < y.n_parity(); ++blk) {
      AxpbyDotKernel<S, NR> k{arr<S, NR>(x, blk, n), arr<S, NR>(y, blk, n), arr<S, NR>(z, blk, n),
                              Complex<T>(static_cast<T>(a.re), static_cast<T>(a.im)),
                              Complex<T>(static_cast<T>(b.re), static_cast<T>(b.im))};
      local += launch_reduce<DotNormSum>(y.backend(), k, {n});
    }
  });
  return over_ranks(local, y.lattice().comm());
}

void caxpbypcz_set(const Cplx* a, const std::vector<ColorSpinorField>& x, const Cplx* b,
                   const std::vector<ColorSpinorField>* y, const Cplx* c, std::vector<ColorSpinorField>& z,
                   double* norms) {
  const int n = static_cast<int>(z.size());
  const Backend be = z[0].backend();
  // The coefficients in T and the launch, with or without the norms, for a term t of n_index
  // indices per field.
  auto go = [&](auto& t, int n_index) {
    using T = decltype(t.a[0].re);
    for (int k = 0; k < n; ++k) {
      t.a[k] = Complex<T>(static_cast<T>(a[k].re), static_cast<T>(a[k].im));
      t.b[k] = y ? Complex<T>(static_cast<T>(b[k].re), static_cast<T>(b[k].im)) : Complex<T>();
      t.c[k] = Complex<T>(static_cast<T>(c[k].re), static_cast<T>(c[k].im));
    }
    if (norms) {
      std::vector<double> local(n);
      launch_segmented_reduce_host<double>(be, t, n, n_index, local.data());
      std::copy(local.begin(), local.end(), norms);
      global_sum(norms, n, z[0].lattice().comm());
    } else {
      launch(be, SetAsKernel<std::remove_reference_t<decltype(t)>>{t, n_index}, {n * n_index}, compute_stream(), false);
    }
  };
  auto variants = [&](auto run) {
    using F = std::false_type;
    using Tr = std::true_type;
    if (y && norms)
      run(Tr{}, Tr{});
    else if (y)
      run(Tr{}, F{});
    else if (norms)
      run(F{}, Tr{});
    else
      run(F{}, F{});
  };
  require_sets(x, z, "caxpbypcz_set");  // before x[0] and z[0] are read
  if (site_path(x[0], z[0], "caxpbypcz_set")) {
    require_accumulator(x[0], z[0], "caxpbypcz_set");
    if (y) require_alike((*y)[0], x[0], "caxpbypcz_set");
    dispatch_precision(x[0].precision(), [&](auto sx) {
      dispatch_precision(z[0].precision(), [&](auto sz) {
        using SX = decltype(sx);
        using SZ = decltype(sz);
        if constexpr (precision_rank<SZ>() >= precision_rank<SX>()) {
          auto by_site = [&](auto nr) {
            constexpr int NR = decltype(nr)::value;
            variants([&](auto has_y, auto norm) {
              SetSiteAxpbyzTerm<SX, SZ, NR, decltype(has_y)::value, decltype(norm)::value> t;
              t.x = site_set<SX, NR>(x, z, "caxpbypcz_set");
              if constexpr (decltype(has_y)::value) t.y = site_set<SX, NR>(*y, z, "caxpbypcz_set");
              t.z = site_set<SZ, NR>(z, z, "caxpbypcz_set");
              go(t, z[0].n_parity() * z[0].lattice().volume_cb());
            });
          };
          dispatch_site_reals(z[0], by_site);
        }
      });
    });
    return;
  }
  dispatch_set(z[0], [&](auto s) {
    using S = decltype(s);
    variants([&](auto has_y, auto norm) {
      constexpr bool HasY = decltype(has_y)::value;
      SetAxpbyzTerm<S, HasY, decltype(norm)::value> t;
      t.z = flat<S>(z, z, "caxpbypcz_set");
      t.x = flat<S>(x, z, "caxpbypcz_set");
      if constexpr (HasY) t.y = flat<S>(*y, z, "caxpbypcz_set");
      go(t, t.z.n_words);
    });
  });
}

namespace {

/// The MR update of a set, with the coefficient source coef(T{}) (GivenCoefficients or
/// SummedCoefficients), placed among the steps by `ends`.
template <typename MakeCoef>
void mr_update_set_with(std::vector<ColorSpinorField>& r, const std::vector<ColorSpinorField>& s,
                        std::vector<ColorSpinorField>& x, bool update_r, const MrSetEnds& ends, MakeCoef coef,
                        const char* what) {
  const int n = static_cast<int>(x.size());
  require_sets(r, x, what);  // before r[0], s[0] and x[0] are read
  require_sets(s, x, what);
  require_alike(r[0], x[0], what);
  require_alike(s[0], x[0], what);
  const std::vector<ColorSpinorField>* into = ends.into;
  require(!(into && update_r), what, ": an update into other fields is the last; it does not update r");
  if (into) {
    require_sets(*into, x, what);
    require_accumulator(x[0], (*into)[0], what);
  }
  auto go = [&](auto& t, int n_index) {
    launch(x[0].backend(), SetAsKernel<std::remove_reference_t<decltype(t)>>{t, n_index}, {n * n_index},
           compute_stream(), false);
  };
  // The step's variant: (UpdateR, XZero, Into) as compile-time flags.
  auto variants = [&](auto run) {
    using F = std::false_type;
    using Tr = std::true_type;
    if (into)
      ends.x_zero ? run(F{}, Tr{}, Tr{}) : run(F{}, F{}, Tr{});
    else if (update_r)
      ends.x_zero ? run(Tr{}, Tr{}, F{}) : run(Tr{}, F{}, F{});
    else
      ends.x_zero ? run(F{}, Tr{}, F{}) : run(F{}, F{}, F{});
  };
  const ColorSpinorField& i0 = into ? (*into)[0] : x[0];
  if (site_path(x[0], i0, what)) {
    dispatch_precision(x[0].precision(), [&](auto sx) {
      dispatch_precision(i0.precision(), [&](auto si) {
        using S = std::decay_t<decltype(sx)>;
        using SI = std::decay_t<decltype(si)>;
        if constexpr (precision_rank<SI>() >= precision_rank<S>()) {
          dispatch_site_reals(x[0], [&](auto nr) {
            constexpr int NR = decltype(nr)::value;
            variants([&](auto u, auto z, auto in) {
              constexpr bool Into = decltype(in)::value;
              // Without `into` only half sets come here: one instance of the rest.
              if constexpr (Into || (std::is_same_v<S, short> && std::is_same_v<SI, short>)) {
                SetSiteMrTerm<S, NR, decltype(coef(compute_t<S>{})), decltype(u)::value, decltype(z)::value, Into, SI>
                    t;
                t.r = site_set<S, NR>(r, x, what);
                t.s = site_set<S, NR>(s, x, what);
                t.x = site_set<S, NR>(x, x, what);
                if constexpr (Into) t.into = site_set<SI, NR>(*into, x, what);
                t.a = coef(compute_t<S>{});
                go(t, x[0].n_parity() * x[0].lattice().volume_cb());
              }
            });
          });
        }
      });
    });
    return;
  }
  dispatch_set(x[0], [&](auto sp) {
    using S = decltype(sp);
    variants([&](auto u, auto z, auto in) {
      constexpr bool Into = decltype(in)::value;
      SetMrTerm<S, decltype(coef(compute_t<S>{})), decltype(u)::value, decltype(z)::value, Into> t;
      t.r = flat<S>(r, x, what);
      t.s = flat<S>(s, x, what);
      t.x = flat<S>(x, x, what);
      if constexpr (Into) t.into = flat<S>(*into, x, what);
      t.a = coef(compute_t<S>{});
      go(t, t.x.n_words);
    });
  });
}

}  // namespace

void mr_update_set(const Cplx* a, std::vector<ColorSpinorField>& r, const std::vector<ColorSpinorField>& s,
                   std::vector<ColorSpinorField>& x, MrSetEnds ends) {
  const int n = static_cast<int>(x.size());
  mr_update_set_with(
      r, s, x, ends.into == nullptr, ends,
      [&](auto t) {
        using T = decltype(t);
        GivenCoefficients<T, set_max> c{};
        for (int k = 0; k < n && k < set_max; ++k)
          c.a[k] = Complex<T>(static_cast<T>(a[k].re), static_cast<T>(a[k].im));
        return c;
      },
      "mr_update_set");
}

void mr_update_set_from(double omega, const DotNormSum* sums, std::vector<ColorSpinorField>& r,
                        const std::vector<ColorSpinorField>& s, std::vector<ColorSpinorField>& x, bool update_r,
                        MrSetEnds ends) {
  require(!x.empty(), "mr_update_set_from: an empty set");
  require_one_rank(x[0], "mr_update_set_from");
  mr_update_set_with(
      r, s, x, update_r, ends,
      [&](auto t) {
        return SummedCoefficients<decltype(t)>{sums, omega};
      },
      "mr_update_set_from");
}

void caxpby_set_to(const Cplx* a, const std::vector<ColorSpinorField>& x, const Cplx* b,
                   const std::vector<ColorSpinorField>& y, std::vector<ColorSpinorField>& w) {
  const char* what = "caxpby_set_to";
  const int n = static_cast<int>(w.size());
  require_sets(x, w, what);  // before x[0], y[0] and w[0] are read
  require_sets(y, w, what);
  require_alike(y[0], x[0], what);
  require(x[0].site_reals() == w[0].site_reals() && x[0].n_parity() == w[0].n_parity() &&
              x[0].backend() == w[0].backend() && x[0].lattice().volume_cb() == w[0].lattice().volume_cb(),
          what, ": fields differ in shape, subset or backend");
  require(mixed_precision_sets(x[0]), what, ": fields with ", x[0].site_reals(),
          " reals per site: expected Wilson (24) or staggered (6) sites");
  dispatch_precision(x[0].precision(), [&](auto sx) {
    dispatch_precision(w[0].precision(), [&](auto sw) {
      using SX = std::decay_t<decltype(sx)>;
      using SW = std::decay_t<decltype(sw)>;
      dispatch_site_reals(x[0], [&](auto nr) {
        constexpr int NR = decltype(nr)::value;
        SetSiteAxpbyToTerm<SX, SW, NR> t;
        using T = typename SetSiteAxpbyToTerm<SX, SW, NR>::T;
        for (int k = 0; k < n; ++k) {
          t.a[k] = Complex<T>(static_cast<T>(a[k].re), static_cast<T>(a[k].im));
          t.b[k] = Complex<T>(static_cast<T>(b[k].re), static_cast<T>(b[k].im));
        }
        t.x = site_set<SX, NR>(x, w, what);
        t.y = site_set<SX, NR>(y, w, what);
        t.w = site_set<SW, NR>(w, w, what);
        const int n_index = w[0].n_parity() * w[0].lattice().volume_cb();
        launch(w[0].backend(), SetAsKernel<SetSiteAxpbyToTerm<SX, SW, NR>>{t, n_index}, {n * n_index}, compute_stream(),
               false);
      });
    });
  });
}

namespace {

/// out[k] = this rank's <x_k, y_k>, |x_k|^2, |y_k|^2 for two sets: in host memory (one host
/// synchronisation for the set) or, where !to_host, left in the backend's memory (a one-rank
/// lattice: nothing more to sum).
void set_dot_norms(const std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& y, DotNormSum* out,
                   bool to_host, const char* what) {
  const int n = static_cast<int>(x.size());
  require_sets(y, x, what);  // before x[0] and y[0] are read
  if (!to_host) require_one_rank(x[0], what);
  const Backend be = x[0].backend();
  auto go = [&](const auto& t, int length) {
    if (to_host)
      launch_segmented_reduce_host<DotNormSum>(be, t, n, length, out);
    else
      launch_segmented_reduce<DotNormSum>(be, t, n, length, out);
  };
  if (site_path(x[0], y[0], what)) {
    require_alike(x[0], y[0], what);
    dispatch_precision(x[0].precision(), [&](auto s) {
      using S = decltype(s);
      dispatch_site_reals(x[0], [&](auto nr) {
        constexpr int NR = decltype(nr)::value;
        go(SetSiteDotNormTerm<S, NR>{site_set<S, NR>(x, x, what), site_set<S, NR>(y, x, what)},
           x[0].n_parity() * x[0].lattice().volume_cb());
      });
    });
  } else {
    dispatch_set(x[0], [&](auto s) {
      using S = decltype(s);
      const SetDotNormTerm<S> t{flat<S>(x, x, what), flat<S>(y, x, what)};
      go(t, t.x.n_words);
    });
  }
}

}  // namespace

void cdot_norms_set(const std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& y, DotNorms* out) {
  const int n = static_cast<int>(x.size());
  std::vector<DotNormSum> local(n);
  std::vector<double> global(4 * n);
  set_dot_norms(x, y, local.data(), true, "cdot_norms_set");
  static_assert(sizeof(DotNormSum) == 4 * sizeof(double), "DotNormSum is four doubles");
  std::memcpy(global.data(), local.data(), 4 * n * sizeof(double));
  global_sum(global.data(), 4 * n, x[0].lattice().comm());
  for (int k = 0; k < n; ++k) out[k] = {Cplx(global[4 * k], global[4 * k + 1]), global[4 * k + 2], global[4 * k + 3]};
}

void cdot_norms_set_to(const std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& y,
                       DotNormSum* sums) {
  set_dot_norms(x, y, sums, false, "cdot_norms_set_to");
}

}  // namespace latke::blas
