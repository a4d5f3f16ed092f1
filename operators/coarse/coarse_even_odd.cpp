// The coarse operator's even-odd factorisation (coarse_operator.h): X^-1 of every site block
// by Gauss-Jordan on the backend, and Yhat_d = X^-1 Y_d, at finalize. Compiled by nvcc in CUDA
// builds.
#include "operators/coarse/coarse_operator.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "operators/coarse/coarse_blocks.h"
#include "src/core/error.h"
#include "src/core/launch.h"

namespace latke::mg {

namespace {

/// X^-1 for every site block X, by Gauss-Jordan with partial pivoting on [X | 1] (an n x 2n
/// row-major matrix per site in double, `scratch`), in parallel over the sites and the
/// entries: one load kernel, then per column k a pivot kernel (one thread per site: choose the
/// pivot row, swap it into row k, scale row k, keep column k's multipliers) and an elimination
/// kernel (one thread per site, row and column >= k), then one store kernel. A site with no
/// usable pivot is flagged in `bad` and skipped from then on. One thread per site doing the
/// whole elimination serially kept too few threads busy on the small coarse levels (16
/// threads of 4M flops each on 2^3x4 with n = 64: about half a second of the setup).
struct InvertScratch {
  Complex<double>* a;     ///< n x 2n per site
  Complex<double>* mult;  ///< n per site: column k before the elimination
  double* scale;          ///< per site: the largest |X_ij|
  int* bad;
  int vcb, n;
  LATKE_HOST_DEVICE LATKE_INLINE long site(int parity, int x) const { return static_cast<long>(parity) * vcb + x; }
  LATKE_HOST_DEVICE LATKE_INLINE Complex<double>& at(long s, int i, int j) const { return a[(s * n + i) * 2 * n + j]; }
};

/// [X | 1] into the scratch: one thread per (site, row, column of 2n).
template <typename SA>
struct InvertLoadKernel {
  BlockView<SA> in;
  InvertScratch w;
  LATKE_HOST_DEVICE void operator()(int idx, int parity) const {
    const int n = w.n, j = idx % (2 * n), i = (idx / (2 * n)) % n, x = idx / (2 * n * n);
    const long s = w.site(parity, x);
    w.at(s, i, j) =
        j < n ? in.template get<double>(in.block(parity, x, 8), j, i) : Complex<double>(i == j - n ? 1.0 : 0.0);
  }
};

/// Per site: the scale of X (for the pivot test) and a clear flag.
struct InvertScaleKernel {
  InvertScratch w;
  LATKE_HOST_DEVICE void operator()(int x, int parity) const {
    const long s = w.site(parity, x);
    double m = 0;
    for (int i = 0; i < w.n; ++i)
      for (int j = 0; j < w.n; ++j) m = fmax(m, sqrt(norm2(w.at(s, i, j))));
    w.scale[s] = m;
  }
};

/// Step k, per site: pivot row into row k, row k scaled to a unit pivot, column k saved.
struct InvertPivotKernel {
  InvertScratch w;
  int k;
  LATKE_HOST_DEVICE void operator()(int x, int parity) const {
    const long s = w.site(parity, x);
    if (w.bad[s]) return;
    const int n = w.n;
    int p = k;
    double best = norm2(w.at(s, k, k));
    for (int i = k + 1; i < n; ++i)
      if (norm2(w.at(s, i, k)) > best) {
        best = norm2(w.at(s, i, k));
        p = i;
      }
    if (!(sqrt(best) > 1e-14 * w.scale[s])) {
      w.bad[s] = 1;
      return;
    }
    if (p != k)
      for (int j = k; j < 2 * n; ++j) {  // columns < k of rows k and p are zero
        const Complex<double> t = w.at(s, k, j);
        w.at(s, k, j) = w.at(s, p, j);
        w.at(s, p, j) = t;
      }
    const Complex<double> inv = Complex<double>(1.0) / w.at(s, k, k);
    for (int j = k; j < 2 * n; ++j) w.at(s, k, j) = w.at(s, k, j) * inv;
    for (int i = 0; i < n; ++i) w.mult[s * n + i] = i == k ? Complex<double>(0.0) : w.at(s, i, k);
  }
};

/// Step k: row i -= mult_i row k, for rows i != k and columns j >= k (one thread each).
struct InvertEliminateKernel {
  InvertScratch w;
  int k;
  LATKE_HOST_DEVICE void operator()(int idx, int parity) const {
    const int n = w.n, width = 2 * n - k;
    const int j = k + idx % width, i = (idx / width) % n, x = idx / (width * n);
    const long s = w.site(parity, x);
    if (w.bad[s] || i == k) return;
    const Complex<double> f = w.mult[s * n + i];
    if (f.re == 0 && f.im == 0) return;
    w.at(s, i, j) -= f * w.at(s, k, j);
  }
};

/// X^-1 (the right half of the scratch) into block 8 of `out`.
template <typename SA>
struct InvertStoreKernel {
  BlockView<SA> out;
  InvertScratch w;
  LATKE_HOST_DEVICE void operator()(int idx, int parity) const {
    const int n = w.n, j = idx % n, i = (idx / n) % n, x = idx / (n * n);
    out.set(out.block(parity, x, 8), j, i, w.at(w.site(parity, x), i, n + j));
  }
};

/// Yhat_d = X^-1 Y_d for d < 8: one thread per (site, d, column, row).
template <typename SA>
struct HatKernel {
  BlockView<SA> links, hat;  ///< hat's block 8 holds X^-1 already
  int n;
  LATKE_HOST_DEVICE void operator()(int idx, int parity) const {
    const int row = idx % n;
    int rest = idx / n;
    const int col = rest % n;
    rest /= n;
    const int d = rest % 8, x = rest / 8;
    const long xi = hat.block(parity, x, 8), y = links.block(parity, x, d);
    Complex<double> s;
    for (int k = 0; k < n; ++k) s += hat.template get<double>(xi, k, row) * links.template get<double>(y, col, k);
    hat.set(hat.block(parity, x, d), col, row, s);
  }
};


}  // namespace

void CoarseOperator::finalize(bool even_odd) {
  require(assembly_.data.data() != nullptr, "coarse operator: finalized twice");
  synchronize(backend_);  // the assembly's kernels are not finalize's time
  const auto t0 = std::chrono::steady_clock::now();
  even_odd_ = even_odd;
  const int vcb = lattice_->volume_cb();
  const MemoryKind mk = memory_for(backend_);
  Links hat;
  if (even_odd) {
    hat.data = Buffer(mk, assembly_.data.bytes());
    const std::size_t vol = lattice_->volume();
    Buffer scratch(mk, vol * 2 * n() * n() * sizeof(Complex<double>));
    Buffer mult(mk, vol * n() * sizeof(Complex<double>)), scale(mk, vol * sizeof(double));
    Buffer bad(mk, vol * sizeof(int));
    zero_bytes(bad.data(), bad.bytes(), mk, compute_stream());
    const InvertScratch w{static_cast<Complex<double>*>(scratch.data()),
                          static_cast<Complex<double>*>(mult.data()),
                          static_cast<double*>(scale.data()),
                          static_cast<int*>(bad.data()),
                          vcb,
                          n()};
    dispatch_precision(assembly_precision_, [&](auto sa) {
      using SA = decltype(sa);
      if constexpr (sizeof(SA) != 2) {
        const BlockView<SA> in = view<SA>(assembly_.data, assembly_.scale, n(), vcb);
        const BlockView<SA> out = view<SA>(hat.data, hat.scale, n(), vcb);
        const int nn = n();
        launch(backend_, InvertLoadKernel<SA>{in, w}, {vcb * nn * 2 * nn, 0, 2}, compute_stream(), false);
        launch(backend_, InvertScaleKernel{w}, {vcb, 0, 2}, compute_stream(), false);
        for (int k = 0; k < nn; ++k) {
          launch(backend_, InvertPivotKernel{w, k}, {vcb, 0, 2}, compute_stream(), false);
          launch(backend_, InvertEliminateKernel{w, k}, {vcb * nn * (2 * nn - k), 0, 2}, compute_stream(), false);
        }
        launch(backend_, InvertStoreKernel<SA>{out, w}, {vcb * nn * nn, 0, 2}, compute_stream(), false);
        launch(backend_, HatKernel<SA>{in, out, n()}, {vcb * 8 * n() * n(), 0, 2}, compute_stream(), false);
      }
    });
    std::vector<int> host(lattice_->volume());
    synchronize(backend_);
    copy_bytes(host.data(), bad.data(), bad.bytes());
    int count = 0;
    for (int b : host) count += b;
    require(count == 0, "coarse operator: the site block X is singular on ", count,
            " coarse sites of this rank; even-odd on this level is impossible (try more null vectors or no even-odd)");
  }
  auto store = [&](Links& src, Links& dst) {
    if (precision_ != Precision::half) {
      dst = std::move(src);
      return;
    }
    dst = half_copy(src, assembly_precision_);
    synchronize(backend_);
    src = Links{};
  };
  store(assembly_, links_);
  if (even_odd) store(hat, hat_);
  synchronize(backend_);
  finalize_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace latke::mg
