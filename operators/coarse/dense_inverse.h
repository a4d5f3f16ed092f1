// The coarsest level's direct solve: the dense inverse of a small operator (the coarsest
// Galerkin operator or its even-odd form, on one rank), found by probing the operator with
// unit vectors (blas::set_max columns per LinearOperator::apply_set) and inverting the
// matrix in double precision where it lies: on CUDA by Gauss-Jordan elimination with partial
// pivoting on the device (much faster there than the host's LU, and no copy to the host);
// on the CPU through Eigen's blocked LU factorization, faster there than the same kernels.
// It is applied on the backend as one dense matrix-vector product in single precision.
//
// Close to kappa_c the coarsest operator is nearly singular and restarted GCR can stall on
// it; the direct solve is exact (to single precision) whatever its condition, and costs one
// pass over n^2 complex numbers (8 MB for the 2^3 x 4 x 64 even-odd system, n = 1024).
//
// The matrix acts on the field's storage order: a field's parity blocks lie end to end and
// the words of the coalesced layout keep each complex number's two reals together, so the
// storage is one array of n complex numbers and no reordering is needed.
#pragma once

#include <cstddef>

#include "src/core/complex.h"
#include "src/core/memory.h"
#include "operators/linear_operator.h"

namespace latke::mg {

/// @brief Column j0 + k of the n x n column-major matrix m (on backend b) from the k-th of
/// `count` probed columns (n complex floats each, end to end).
void store_columns(Backend b, Complex<double>* m, int n, int j0, const Complex<float>* cols, int count);
/// @brief Invert the n x n column-major matrix a (on backend b) in place by Gauss-Jordan
/// elimination with partial pivoting: per column the pivot is chosen on the host from the
/// column, then two kernels of n threads and one of n^2 do the step. Fails naming n and the
/// column when no pivot is left (singular).
void gauss_jordan_inverse(Backend b, Complex<double>* a, int n);
/// @brief max_j sum_i |a(i, j)|, the 1-norm of the column-major matrix a (infinite when an
/// entry is not finite).
double norm1(Backend b, const Complex<double>* a, int n);
/// @brief out (row-major, single) = a (column-major, double).
void to_row_major_single(Backend b, const Complex<double>* a, int n, Complex<float>* out);

class DenseInverse {
 public:
  /// @brief Probe A (single-precision fields, its lattice on one rank) and invert it. Fails
  /// naming the size when A is singular to working precision. Probes blas::set_max columns per
  /// A.apply_set (one pass over the coarse operator's blocks for all of them where A
  /// applies_sets(), else column by column).
  explicit DenseInverse(LinearOperator& A);
  /// The unknowns of A's system on this rank: the order of the matrix it inverts.
  static long unknowns(const LinearOperator& A);
  /// @brief x = A^-1 b (fields of A's shape).
  void apply(ColorSpinorField& x, const ColorSpinorField& b) const;
  int n() const { return n_; }
  std::size_t bytes() const { return inv_.bytes(); }
  /// Estimate of the 1-norm condition number of A (from the inverse), for reports.
  double condition() const { return condition_; }

 private:
  SpinorParam param_;
  int n_ = 0;
  double condition_ = 0;
  Buffer inv_;  ///< row-major n x n, Complex<float> (a row is one reduction's coalesced reads)
};

}  // namespace latke::mg
