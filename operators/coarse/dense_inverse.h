// The coarsest level's direct solve: the dense inverse of a small operator (the coarsest
// Galerkin operator or its even-odd form), found by probing the operator with unit vectors
// (blas::set_max columns per LinearOperator::apply_set) and inverting the matrix in double
// precision where it lies: on CUDA by Gauss-Jordan elimination with partial pivoting on the
// device (much faster there than the host's LU, and no copy to the host); on the CPU through
// Eigen's blocked LU factorization, faster there than the same kernels. It is applied on the
// backend as one dense matrix-vector product in single precision.
//
// On several ranks the matrix is gathered onto every rank (as PETSc's PCREDUNDANT): each
// probes the rows of its own unknowns, the row blocks are all-gathered once at setup, and
// every rank inverts the whole matrix and keeps the rows of the inverse for its unknowns. A
// solve then all-gathers the right-hand side (one MPI_Allgatherv of n complex numbers) and
// multiplies by those rows: no iterative solve, halo exchange or reduction across ranks, and
// one message where a GCR coarsest solve spends one halo exchange and one or two reductions
// per iteration. The unknowns are numbered rank by rank, each rank's in its storage order.
//
// Close to kappa_c the coarsest operator is nearly singular and restarted GCR can stall on
// it; the direct solve is exact (to single precision) whatever its condition, and costs one
// pass over n^2 complex numbers (8 MB for the 2^3 x 4 x 64 even-odd system, n = 1024).
//
// The matrix acts on the field's storage order: a field's parity blocks lie end to end and
// the words of the coalesced layout keep each complex number's two reals together, so the
// storage is one array of n complex numbers and no reordering is needed.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "src/core/complex.h"
#include "src/core/memory.h"
#include "operators/linear_operator.h"

namespace latke::mg {

/// @brief Column j0 + k of the column-major matrix m of `rows` rows (on backend b) from the
/// k-th of `count` probed columns (rows complex floats each, end to end).
void store_columns(Backend b, Complex<double>* m, int rows, int j0, const Complex<float>* cols, int count);
/// @brief Invert the n x n column-major matrix a (on backend b) in place by Gauss-Jordan
/// elimination with partial pivoting: per column the pivot is chosen on the host from the
/// column, then two kernels of n threads and one of n^2 do the step. Fails naming n and the
/// column when no pivot is left (singular).
void gauss_jordan_inverse(Backend b, Complex<double>* a, int n);
/// @brief max_j sum_i |a(i, j)|, the 1-norm of the column-major matrix a (infinite when an
/// entry is not finite).
double norm1(Backend b, const Complex<double>* a, int n);
/// @brief out (row-major, single) = rows row0 .. row0 + rows - 1 of the n x n column-major
/// matrix a (double).
void to_row_major_single(Backend b, const Complex<double>* a, int n, int row0, int rows, Complex<float>* out);

class DenseInverse {
 public:
  /// @brief Probe A (single-precision fields, on one rank or several) and invert it. Fails
  /// naming the size when A is singular to working precision. Probes blas::set_max columns per
  /// A.apply_set (one pass over the coarse operator's blocks for all of them where A
  /// applies_sets(), else column by column). Collective over A's ranks.
  explicit DenseInverse(LinearOperator& A);
  /// The unknowns of A's system on this rank.
  static long unknowns(const LinearOperator& A);
  /// The unknowns of A's system on all its ranks: the order of the matrix inverted. Collective.
  static long global_unknowns(const LinearOperator& A);
  /// @brief x = A^-1 b (fields of A's shape). Collective over A's ranks.
  void apply(ColorSpinorField& x, const ColorSpinorField& b) const;
  /// @brief x_k = A^-1 b_k for sets (make_set) of fields of A's shape: on one rank one pass for
  /// the whole set (each row of the inverse read once per field, from cache after the first);
  /// on several ranks, or for loose fields, field by field. Collective over A's ranks.
  void apply_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b) const;
  int n() const { return n_; }
  /// Ranks that hold the whole matrix (each its rows of the inverse): A's ranks.
  int ranks() const { return static_cast<int>(counts_.size()); }
  std::size_t bytes() const { return inv_.bytes(); }
  /// Estimate of the 1-norm condition number of A (from the inverse), for reports.
  double condition() const { return condition_; }

 private:
  SpinorParam param_;
  MPI_Comm comm_ = MPI_COMM_SELF;
  int n_ = 0, rows_ = 0;             ///< unknowns in all; this rank's (its rows of the inverse)
  std::vector<int> counts_, displs_;  ///< per rank: its unknowns and the first one's number (floats x 2)
  double condition_ = 0;
  Buffer inv_;  ///< row-major rows_ x n_, Complex<float> (a row is one reduction's coalesced reads)
  /// Several ranks: the right-hand side gathered (on the backend) and its staging on the host.
  Buffer b_all_, stage_mine_, stage_all_;
};

}  // namespace latke::mg
