// The coarsest level's dense inverse (dense_inverse.h): probing and inversion (host code; the
// kernels, Gauss-Jordan's and the product that applies the inverse, are in
// dense_inverse_kernels.cpp).
#include "operators/coarse/dense_inverse.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "src/core/complex.h"
#include "src/core/error.h"
#include "src/fields/blas.h"

namespace latke::mg {

namespace {

/// A^-1 from its factorization, solving for the columns of the identity in chunks across the
/// host's OpenMP threads: Eigen's inverse() solves all n right-hand sides on one thread (the
/// triangular solves take several times the factorization, which is parallel already), and
/// this runs once per setup on every rank.
Eigen::MatrixXcd inverse_by_columns(const Eigen::PartialPivLU<Eigen::MatrixXcd>& lu, int n) {
  Eigen::MatrixXcd inv(n, n);
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  const int chunks = std::max(1, std::min(4 * threads, n / 32));
#pragma omp parallel for schedule(dynamic)
  for (int c = 0; c < chunks; ++c) {
    const int j0 = static_cast<int>(static_cast<long>(n) * c / chunks);
    const int j1 = static_cast<int>(static_cast<long>(n) * (c + 1) / chunks);
    inv.middleCols(j0, j1 - j0) = lu.solve(Eigen::MatrixXcd::Identity(n, n).middleCols(j0, j1 - j0));
  }
  return inv;
}

}  // namespace

long DenseInverse::unknowns(const LinearOperator& A) {
  const SpinorParam p = A.field_param();
  return (p.subset == Subset::full ? 2L : 1L) * A.lattice()->volume_cb() * p.nspin * p.ncolor;
}

DenseInverse::DenseInverse(LinearOperator& A) : param_(A.field_param()) {
  const Lattice& lat = *A.lattice();
  require(lat.size() == 1, "multigrid direct coarsest solve: the coarsest lattice is spread over ", lat.size(),
          " ranks; it needs one (use the gcr coarsest solver)");
  require(param_.precision == Precision::single, "multigrid direct coarsest solve: fields in ",
          to_string(param_.precision), "; expected single");
  require(unknowns(A) <= 16384, "multigrid direct coarsest solve: ", unknowns(A),
          " unknowns; at most 16384 are inverted densely");
  n_ = static_cast<int>(unknowns(A));
  // Probe: column j of A is A e_j, e_j the unit vector at storage position j; blas::set_max
  // columns per apply_set (field k of the set holds e_{j0 + k}).
  const int per = std::min(blas::set_max, n_);
  std::vector<ColorSpinorField> es = ColorSpinorField::make_set(A.lattice(), param_, per),
                                ys = ColorSpinorField::make_set(A.lattice(), param_, per);
  require(es[0].bytes() == static_cast<std::size_t>(n_) * sizeof(Complex<float>),
          "multigrid direct coarsest solve: a field is not stored as its ", n_, " complex numbers end to end");
  // The matrix, column-major in double precision on the backend.
  Buffer m(memory_for(param_.backend), static_cast<std::size_t>(n_) * n_ * sizeof(Complex<double>));
  auto* md = static_cast<Complex<double>*>(m.data());
  const Complex<float> one(1, 0), zero(0, 0);
  auto* e0 = static_cast<Complex<float>*>(es[0].block_data(0));
  synchronize(param_.backend);
  for (int j0 = 0; j0 < n_; j0 += per) {
    const int count = std::min(per, n_ - j0);
    for (int k = 0; k < count; ++k) copy_bytes(e0 + static_cast<std::size_t>(k) * n_ + j0 + k, &one, sizeof one);
    synchronize(param_.backend);
    A.apply_set(ys, es);  // fields past count are zero: their columns are not stored
    store_columns(param_.backend, md, n_, j0, static_cast<const Complex<float>*>(ys[0].block_data(0)), count);
    synchronize(param_.backend);
    for (int k = 0; k < count; ++k) copy_bytes(e0 + static_cast<std::size_t>(k) * n_ + j0 + k, &zero, sizeof zero);
  }
  const double norm_a = norm1(param_.backend, md, n_);
  if (param_.backend == Backend::cuda) {
    gauss_jordan_inverse(param_.backend, md, n_);
  } else {
    Eigen::Map<Eigen::MatrixXcd> M(reinterpret_cast<std::complex<double>*>(md), n_, n_);
    const Eigen::PartialPivLU<Eigen::MatrixXcd> lu(M);
    M = inverse_by_columns(lu, n_);
  }
  const double norm_i = norm1(param_.backend, md, n_);
  condition_ = norm_a * norm_i;
  require(std::isfinite(condition_) && condition_ < 1e12, "multigrid direct coarsest solve: the ", n_,
          "-dimensional coarsest operator is singular (1-norm condition number ", condition_, ")");
  inv_ = Buffer(memory_for(param_.backend), static_cast<std::size_t>(n_) * n_ * sizeof(Complex<float>));
  to_row_major_single(param_.backend, md, n_, static_cast<Complex<float>*>(inv_.data()));
  synchronize(param_.backend);  // before m goes
}

}  // namespace latke::mg
