// The coarsest level's direct solve: the dense inverse of a small operator (the coarsest
// Galerkin operator or its even-odd form, on one rank), found on the host by probing the
// operator with unit vectors and inverting through an LU factorization (Eigen), then applied
// on the backend as one dense matrix-vector product in single precision.
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

#include "latke/core/memory.h"
#include "solvers/linear_operator.h"
#include "solvers/solvers.h"

namespace latke::mg {

class DenseInverse {
 public:
  /// @brief Probe A (single-precision fields, its lattice on one rank) and invert it. Fails
  /// naming the size when A is singular to working precision. set: A over a set of fields
  /// (e.g. CoarseOperator::apply_set), which probes blas::set_max columns at once; empty:
  /// one column per application of A.
  explicit DenseInverse(LinearOperator& A, const SetOperator& set = nullptr);
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
