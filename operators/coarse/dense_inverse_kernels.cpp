// The coarsest level's dense inverse (dense_inverse.h), its kernels: the probed columns stored,
// Gauss-Jordan elimination, the 1-norm, and the product that applies the inverse (one
// segmented reduction, a row of the inverse per segment). Compiled as CUDA where enabled.
#include <cmath>
#include <vector>

#include "src/core/complex.h"
#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/memory.h"
#include "operators/coarse/dense_inverse.h"

namespace latke::mg {

namespace {

using Cd = Complex<double>;

/// Column j0 + k of the column-major matrix of `rows` rows from field k of a probed set (rows
/// complex floats each).
struct StoreColumnsKernel {
  Cd* m;
  const Complex<float>* cols;
  int rows, j0;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const long k = idx / rows, i = idx % rows;
    const Complex<float> c = cols[k * rows + i];
    m[(j0 + k) * static_cast<long>(rows) + i] = Cd(c.re, c.im);
  }
};

/// c[i] = a(i, k) after rows k and p are swapped (read before the swap, which another kernel does).
struct PivotColumnKernel {
  const Cd* a;
  Cd* c;
  int n, k, p;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    const int row = i == k ? p : i == p ? k : i;
    c[i] = a[static_cast<long>(k) * n + row];
  }
};

/// Rows k and p swapped in column j, and r[j] = row k of the eliminated matrix: a(k, j) d,
/// with d = 1 / a(k, k) in column k.
struct PivotRowKernel {
  Cd* a;
  Cd* r;
  int n, k, p;
  Cd d;
  LATKE_HOST_DEVICE void operator()(int j, int) const {
    Cd* col = a + static_cast<long>(j) * n;
    if (p != k) {
      const Cd t = col[k];
      col[k] = col[p];
      col[p] = t;
    }
    r[j] = j == k ? d : col[k] * d;
  }
};

/// The in-place Gauss-Jordan step on column k: row k becomes r; every other row i subtracts
/// c[i] times it, column k taken as zero before (so that it ends as -c[i] d, A^-1's column).
struct EliminateKernel {
  Cd* a;
  const Cd* c;
  const Cd* r;
  int n, k;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int i = idx % n, j = idx / n;
    Cd& x = a[static_cast<long>(j) * n + i];
    if (i == k)
      x = r[j];
    else
      x = (j == k ? Cd(0) : x) - c[i] * r[j];
  }
};

/// out's column j = a's column src[j] (undoing the pivots' row swaps on the inverse's columns).
struct GatherColumnsKernel {
  const Cd* a;
  const int* src;
  Cd* out;
  int n;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const long i = idx % n, j = idx / n;
    out[j * n + i] = a[static_cast<long>(src[j]) * n + i];
  }
};

/// |a(i, j)|, summed over i per column j.
struct AbsColumnTerm {
  const Cd* a;
  int n;
  LATKE_HOST_DEVICE double operator()(int j, int i) const {
    const Cd z = a[static_cast<long>(j) * n + i];
    return sqrt(z.re * z.re + z.im * z.im);
  }
};

/// The row-major single-precision copy of rows row0 .. that apply() reads.
struct RowMajorSingleKernel {
  const Cd* a;
  Complex<float>* out;
  int n, row0;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const long j = idx % n, i = idx / n;
    const Cd z = a[j * n + row0 + i];
    out[idx] = Complex<float>(static_cast<float>(z.re), static_cast<float>(z.im));
  }
};

/// Term j of row i of x = A^-1 b: A^-1(i, j) b(j), the row read contiguously.
struct DenseRowTerm {
  const Complex<float>* a;
  const Complex<float>* b;
  int n;
  LATKE_HOST_DEVICE Complex<float> operator()(int i, int j) const {
    const Complex<float> m = a[static_cast<long>(i) * n + j], v = b[j];
    return Complex<float>(m.re * v.re - m.im * v.im, m.re * v.im + m.im * v.re);
  }
};

/// Term j of row i of field k of X = A^-1 B for a set (segment k rows + i): the rows are read
/// once per field, from cache after the first.
struct DenseSetRowTerm {
  const Complex<float>* a;
  const Complex<float>* b;  ///< field 0; field k n values further on
  int n, rows;
  LATKE_HOST_DEVICE Complex<float> operator()(int seg, int j) const {
    const int k = seg / rows, i = seg - k * rows;
    const Complex<float> m = a[static_cast<long>(i) * n + j], v = b[static_cast<long>(k) * n + j];
    return Complex<float>(m.re * v.re - m.im * v.im, m.re * v.im + m.im * v.re);
  }
};

}  // namespace

void store_columns(Backend b, Complex<double>* m, int rows, int j0, const Complex<float>* cols, int count) {
  launch(b, StoreColumnsKernel{m, cols, rows, j0}, {rows * count});
}

void gauss_jordan_inverse(Backend b, Complex<double>* a, int n) {
  const MemoryKind mk = memory_for(b);
  Buffer c(mk, n * sizeof(Cd)), r(mk, n * sizeof(Cd)), src_d(mk, n * sizeof(int)),
      column(MemoryKind::pinned, n * sizeof(Cd));
  Cd* cd = static_cast<Cd*>(c.data());
  Cd* rd = static_cast<Cd*>(r.data());
  const Cd* col = static_cast<const Cd*>(column.data());
  std::vector<int> piv(n);
  for (int k = 0; k < n; ++k) {
    // The pivot: the largest magnitude in column k at or below the diagonal, found on the host.
    copy_bytes(column.data(), a + static_cast<long>(k) * n + k, (n - k) * sizeof(Cd), compute_stream());
    synchronize(compute_stream());
    int p = k;
    double best = -1;
    for (int i = k; i < n; ++i) {
      const double m = norm2(col[i - k]);
      if (m > best) best = m, p = i;
    }
    require(std::isfinite(best) && best > 0, "multigrid direct coarsest solve: the ", n,
            "-dimensional coarsest operator is singular (no pivot in column ", k, ")");
    piv[k] = p;
    const Cd d = Cd(1) / col[p - k];
    launch(b, PivotColumnKernel{a, cd, n, k, p}, {n});
    launch(b, PivotRowKernel{a, rd, n, k, p, d}, {n}, compute_stream(), false);
    launch(b, EliminateKernel{a, cd, rd, n, k}, {n * n}, compute_stream(), false);
  }
  // The row swaps of the elimination permute the inverse's columns: undo them, last first.
  std::vector<int> src(n);
  for (int j = 0; j < n; ++j) src[j] = j;
  for (int k = n - 1; k >= 0; --k) std::swap(src[k], src[piv[k]]);
  copy_bytes(src_d.data(), src.data(), n * sizeof(int), compute_stream());
  Buffer out(mk, static_cast<std::size_t>(n) * n * sizeof(Cd));
  launch(b, GatherColumnsKernel{a, static_cast<const int*>(src_d.data()), static_cast<Cd*>(out.data()), n}, {n * n});
  copy_bytes(a, out.data(), out.bytes(), compute_stream());
  synchronize(compute_stream());  // before src and out go
}

double norm1(Backend b, const Complex<double>* a, int n) {
  std::vector<double> sums(n);
  launch_segmented_reduce_host(b, AbsColumnTerm{a, n}, n, n, sums.data());
  double m = 0;
  for (double s : sums) m = std::isfinite(s) && std::isfinite(m) ? std::max(m, s) : INFINITY;
  return m;
}

void to_row_major_single(Backend b, const Complex<double>* a, int n, int row0, int rows, Complex<float>* out) {
  launch(b, RowMajorSingleKernel{a, out, n, row0}, {rows * n});
}

void DenseInverse::apply(ColorSpinorField& x, const ColorSpinorField& b) const {
  require(x.precision() == param_.precision && b.precision() == param_.precision &&
              x.bytes() == static_cast<std::size_t>(rows_) * sizeof(Complex<float>) && b.bytes() == x.bytes(),
          "multigrid direct coarsest solve: fields not of the operator's shape");
  const Complex<float>* rhs = static_cast<const Complex<float>*>(b.block_data(0));
  if (ranks() > 1) {  // every rank's right-hand side, staged through the host
    const std::size_t mine = static_cast<std::size_t>(rows_) * sizeof(Complex<float>);
    copy_bytes(stage_mine_.data(), rhs, mine, compute_stream());
    synchronize(compute_stream());
    const int rc = MPI_Allgatherv(stage_mine_.data(), 2 * rows_, MPI_FLOAT, stage_all_.data(), counts_.data(),
                                  displs_.data(), MPI_FLOAT, comm_);
    require(rc == MPI_SUCCESS, "multigrid direct coarsest solve: MPI_Allgatherv failed with code ", rc);
    copy_bytes(b_all_.data(), stage_all_.data(), b_all_.bytes(), compute_stream());
    rhs = static_cast<const Complex<float>*>(b_all_.data());
  }
  launch_segmented_reduce(param_.backend, DenseRowTerm{static_cast<const Complex<float>*>(inv_.data()), rhs, n_},
                          rows_, n_, static_cast<Complex<float>*>(x.block_data(0)));
}

void DenseInverse::apply_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b) const {
  require(x.size() == b.size(), "multigrid direct coarsest solve: sets of ", b.size(), " and ", x.size(),
          " fields; expected equal sizes");
  if (ranks() > 1 || x.size() < 2 || !is_set(x) || !is_set(b)) {  // field by field (each gathers its own)
    for (std::size_t k = 0; k < b.size(); ++k) apply(x[k], b[k]);
    return;
  }
  for (std::size_t k = 0; k < b.size(); ++k)
    require(x[k].precision() == param_.precision && b[k].precision() == param_.precision &&
                x[k].bytes() == static_cast<std::size_t>(rows_) * sizeof(Complex<float>) &&
                b[k].bytes() == x[k].bytes(),
            "multigrid direct coarsest solve: fields not of the operator's shape");
  const int count = static_cast<int>(b.size());
  launch_segmented_reduce(param_.backend,
                          DenseSetRowTerm{static_cast<const Complex<float>*>(inv_.data()),
                                          static_cast<const Complex<float>*>(b[0].block_data(0)), n_, rows_},
                          count * rows_, n_, static_cast<Complex<float>*>(x[0].block_data(0)));
}

}  // namespace latke::mg
