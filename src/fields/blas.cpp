// Fused BLAS-1 kernels (blas.h). Compiled by nvcc in CUDA builds.
#include "latke/fields/blas.h"

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "latke/core/error.h"
#include "latke/core/launch.h"

namespace latke::blas {

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

/// Launches the update as a plain kernel (return value ignored).
template <typename K>
struct AsVoid {
  K k;
  LATKE_HOST_DEVICE void operator()(int i, int p) const { (void)k(i, p); }
};

struct DotNormSum {
  double re = 0, im = 0, xx = 0, yy = 0;
  LATKE_HOST_DEVICE DotNormSum& operator+=(const DotNormSum& o) {
    re += o.re, im += o.im, xx += o.xx, yy += o.yy;
    return *this;
  }
};

template <typename S, int NR>
struct DotNormKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x, y;
  LATKE_HOST_DEVICE DotNormSum operator()(int i, int) const {
    T u[NR], v[NR];
    x.load(u, i);
    y.load(v, i);
    DotNormSum s;
    for (int k = 0; k < NR; k += 2) {
      const double xr = u[k], xi = u[k + 1], yr = v[k], yi = v[k + 1];
      s.re += xr * yr + xi * yi;
      s.im += xr * yi - xi * yr;
      s.xx += xr * xr + xi * xi;
      s.yy += yr * yr + yi * yi;
    }
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
    double global = 0;
    MPI_Allreduce(&norm, &global, 1, MPI_DOUBLE, MPI_SUM, z.lattice().comm());
    return global;
  }
  return 0;
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

/// y += sum a_j x_j for the first n vectors.
template <typename S, int NR>
struct MultiAxpyKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> x[multi_chunk], y;
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
template <typename S, int NR>
struct MultiShiftKernel {
  using T = compute_t<S>;
  SiteArray<S, NR, 1> r, x[multishift_max], p[multishift_max];
  T alpha[multishift_max], zeta[multishift_max], beta[multishift_max];
  int n = 0;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    T rv[NR];
    r.load(rv, i);
    for (int k = 0; k < n; ++k) {
      T xv[NR], pv[NR];
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
  MPI_Allreduce(local.data(), global.data(), 2 * n, MPI_DOUBLE, MPI_SUM, y.lattice().comm());
  for (int j = 0; j < n; ++j) out[j] = Cplx(global[2 * j], global[2 * j + 1]);
}

void caxpy_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField& y) {
  for (int j = 0; j < n; ++j) require_alike(*x[j], y, "caxpy_multi");
  dispatch(y, [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    for (int j0 = 0; j0 < n; j0 += multi_chunk) {
      const int m = std::min(multi_chunk, n - j0);
      for (int blk = 0; blk < y.n_parity(); ++blk) {
        MultiAxpyKernel<S, NR> k;
        for (int j = 0; j < m; ++j) {
          k.x[j] = arr<S, NR>(*x[j0 + j], blk, sites);
          k.a[j] = Complex<T>(static_cast<T>(a[j0 + j].re), static_cast<T>(a[j0 + j].im));
        }
        k.y = arr<S, NR>(y, blk, sites);
        k.n = m;
        launch(y.backend(), k, {sites}, compute_stream(), false);
      }
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
    require_alike(r, *x[k], "multishift_update");
    require_alike(r, *p[k], "multishift_update");
  }
  dispatch(r, [&](auto s, auto nr, int sites) {
    using S = decltype(s);
    constexpr int NR = decltype(nr)::value;
    using T = compute_t<S>;
    for (std::size_t k0 = 0; k0 < n; k0 += multishift_max)
      for (int blk = 0; blk < r.n_parity(); ++blk) {
        MultiShiftKernel<S, NR> k;
        k.r = arr<S, NR>(r, blk, sites);
        k.n = static_cast<int>(std::min<std::size_t>(multishift_max, n - k0));
        for (int j = 0; j < k.n; ++j) {
          k.x[j] = arr<S, NR>(*x[k0 + j], blk, sites);
          k.p[j] = arr<S, NR>(*p[k0 + j], blk, sites);
          k.alpha[j] = static_cast<T>(alpha[k0 + j]);
          k.zeta[j] = static_cast<T>(zeta[k0 + j]);
          k.beta[j] = static_cast<T>(beta[k0 + j]);
        }
        launch(r.backend(), k, {sites}, compute_stream(), false);
      }
  });
}

void caxpby(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y) {
  require_alike(x, y, "caxpby");
  axpbyz<false, false>(a, x, Cplx(), nullptr, b, y);
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
  double in[4] = {local.re, local.im, local.xx, local.yy}, out[4];
  MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_SUM, x.lattice().comm());
  return {Cplx(out[0], out[1]), out[2], out[3]};
}

}  // namespace latke::blas
