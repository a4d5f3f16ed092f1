// The coarsest level's dense inverse (dense_inverse.h): probing and inversion (host code; the
// kernels, Gauss-Jordan's and the product that applies the inverse, are in
// dense_inverse_kernels.cpp).
#include "operators/coarse/dense_inverse.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "src/core/complex.h"
#include "src/core/error.h"
#include "src/fields/blas.h"

namespace latke::mg {

// LAPACK (OpenBLAS where the build found it: blocked, vectorized and threaded for the host).
extern "C" {
void zgetrf_(const int* m, const int* n, std::complex<double>* a, const int* lda, int* ipiv, int* info);
void zgetri_(const int* n, std::complex<double>* a, const int* lda, const int* ipiv, std::complex<double>* work,
             const int* lwork, int* info);
}

namespace {

/// A^-1 in place (column-major n x n) by LU with partial pivoting; false where A is exactly
/// singular (a zero pivot).
bool invert_on_host(std::complex<double>* a, int n) {
  std::vector<int> pivots(n);
  int info = 0;
  zgetrf_(&n, &n, a, &n, pivots.data(), &info);
  require(info >= 0, "multigrid direct coarsest solve: LAPACK zgetrf argument ", -info, " is invalid");
  if (info > 0) return false;
  int lwork = -1;
  std::complex<double> query;
  zgetri_(&n, a, &n, pivots.data(), &query, &lwork, &info);
  lwork = std::max(n, static_cast<int>(query.real()));
  std::vector<std::complex<double>> work(lwork);
  zgetri_(&n, a, &n, pivots.data(), work.data(), &lwork, &info);
  require(info >= 0, "multigrid direct coarsest solve: LAPACK zgetri argument ", -info, " is invalid");
  return info == 0;
}

}  // namespace

long DenseInverse::unknowns(const LinearOperator& A) {
  const SpinorParam p = A.field_param();
  return (p.subset == Subset::full ? 2L : 1L) * A.lattice()->volume_cb() * p.nspin * p.ncolor;
}

long DenseInverse::global_unknowns(const LinearOperator& A) {
  long mine = unknowns(A), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, A.lattice()->comm());
  return all;
}

DenseInverse::DenseInverse(LinearOperator& A) : param_(A.field_param()), comm_(A.lattice()->comm()) {
  const Lattice& lat = *A.lattice();
  require(param_.precision == Precision::single, "multigrid direct coarsest solve: fields in ",
          to_string(param_.precision), "; expected single");
  const long total = global_unknowns(A);
  require(total <= 16384, "multigrid direct coarsest solve: ", total, " unknowns",
          lat.size() > 1 ? " on all ranks" : "", "; at most 16384 are inverted densely");
  n_ = static_cast<int>(total);
  rows_ = static_cast<int>(unknowns(A));
  // Every rank's unknowns and where they start in the numbering (in floats: 2 per unknown).
  std::vector<int> rows_of(lat.size());
  MPI_Allgather(&rows_, 1, MPI_INT, rows_of.data(), 1, MPI_INT, comm_);
  counts_.resize(lat.size());
  displs_.resize(lat.size());
  int row0 = 0;
  for (int r = 0, at = 0; r < lat.size(); at += rows_of[r], ++r) {
    counts_[r] = 2 * rows_of[r];
    displs_[r] = 2 * at;
    if (r == lat.rank()) row0 = at;
  }
  // Probe: column j of A is A e_j, e_j the unit vector at position j of the numbering (on
  // the rank that has it, at its storage position there); blas::set_max columns per
  // apply_set (field k of the set holds e_{j0 + k}), each rank keeping its rows.
  const int per = std::min(blas::set_max, n_);
  std::vector<ColorSpinorField> es = ColorSpinorField::make_set(A.lattice(), param_, per),
                                ys = ColorSpinorField::make_set(A.lattice(), param_, per);
  require(es[0].bytes() == static_cast<std::size_t>(rows_) * sizeof(Complex<float>),
          "multigrid direct coarsest solve: a field is not stored as its ", rows_, " complex numbers end to end");
  // The matrix, column-major in double precision on the backend: this rank's rows first.
  Buffer m(memory_for(param_.backend), static_cast<std::size_t>(n_) * n_ * sizeof(Complex<double>));
  auto* md = static_cast<Complex<double>*>(m.data());
  const Complex<float> one(1, 0), zero(0, 0);
  auto* e0 = static_cast<Complex<float>*>(es[0].block_data(0));
  auto unit = [&](int j0, int k, const Complex<float>& v) {
    const int j = j0 + k;
    if (j >= row0 && j < row0 + rows_)
      copy_bytes(e0 + static_cast<std::size_t>(k) * rows_ + (j - row0), &v, sizeof v);
  };
  synchronize(param_.backend);
  for (int j0 = 0; j0 < n_; j0 += per) {
    const int count = std::min(per, n_ - j0);
    for (int k = 0; k < count; ++k) unit(j0, k, one);
    synchronize(param_.backend);
    A.apply_set(ys, es);  // fields past count are zero: their columns are not stored
    store_columns(param_.backend, md, rows_, j0, static_cast<const Complex<float>*>(ys[0].block_data(0)), count);
    synchronize(param_.backend);
    for (int k = 0; k < count; ++k) unit(j0, k, zero);
  }
  if (lat.size() > 1) {
    // Every rank's rows (rows x n, column-major each) gathered on every rank through the host,
    // and laid out as the n x n matrix.
    std::vector<Complex<double>> mine(static_cast<std::size_t>(rows_) * n_), blocks(static_cast<std::size_t>(n_) * n_);
    copy_bytes(mine.data(), md, mine.size() * sizeof(Complex<double>), compute_stream());
    synchronize(compute_stream());
    std::vector<int> count(lat.size()), displ(lat.size());
    for (int r = 0; r < lat.size(); ++r) {  // in doubles: 2 per complex, n per row
      count[r] = counts_[r] * n_;
      displ[r] = displs_[r] * n_;
    }
    const int rc = MPI_Allgatherv(mine.data(), 2 * rows_ * n_, MPI_DOUBLE, blocks.data(), count.data(), displ.data(),
                                  MPI_DOUBLE, comm_);
    require(rc == MPI_SUCCESS, "multigrid direct coarsest solve: MPI_Allgatherv failed with code ", rc);
    std::vector<Complex<double>> whole(blocks.size());
    for (int r = 0; r < lat.size(); ++r) {
      const int nr = rows_of[r], at = displs_[r] / 2;
      const Complex<double>* blk = blocks.data() + static_cast<std::size_t>(at) * n_;
      for (int j = 0; j < n_; ++j)
        std::copy_n(blk + static_cast<std::size_t>(j) * nr, nr, whole.data() + static_cast<std::size_t>(j) * n_ + at);
    }
    copy_bytes(md, whole.data(), whole.size() * sizeof(Complex<double>), compute_stream());
    synchronize(compute_stream());
  }
  const double norm_a = norm1(param_.backend, md, n_);
  bool regular = true;
  if (param_.backend == Backend::cuda)
    gauss_jordan_inverse(param_.backend, md, n_);
  else
    regular = invert_on_host(reinterpret_cast<std::complex<double>*>(md), n_);
  const double norm_i = regular ? norm1(param_.backend, md, n_) : HUGE_VAL;
  condition_ = norm_a * norm_i;
  require(std::isfinite(condition_) && condition_ < 1e12, "multigrid direct coarsest solve: the ", n_,
          "-dimensional coarsest operator is singular (1-norm condition number ", condition_, ")");
  inv_ = Buffer(memory_for(param_.backend), static_cast<std::size_t>(rows_) * n_ * sizeof(Complex<float>));
  to_row_major_single(param_.backend, md, n_, row0, rows_, static_cast<Complex<float>*>(inv_.data()));
  if (lat.size() > 1) {
    const MemoryKind staging = param_.backend == Backend::cuda ? MemoryKind::pinned : MemoryKind::host;
    b_all_ = Buffer(memory_for(param_.backend), static_cast<std::size_t>(n_) * sizeof(Complex<float>));
    stage_mine_ = Buffer(staging, static_cast<std::size_t>(rows_) * sizeof(Complex<float>));
    stage_all_ = Buffer(staging, static_cast<std::size_t>(n_) * sizeof(Complex<float>));
  }
  synchronize(param_.backend);  // before m goes
}

}  // namespace latke::mg
