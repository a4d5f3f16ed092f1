// Latke's native Krylov solvers: device-resident (every vector operation is a fused kernel on
// the operator's backend), mixed precision by reliable updates. They are the baseline the
// preconditioners are measured against and the block solvers inside them.
//
// Mixed precision: the iteration runs on the sloppy operator's fields (single or half
// storage); the solution is accumulated in double, and whenever the iterated residual has
// fallen by the factor delta since the last update (or reached the tolerance), the true
// residual b - A x is recomputed with the double operator and the recurrence continues from
// it (reliable updates, Sleijpen and van der Vorst; as in QUDA). Convergence is declared on
// the true residual only: |b - A x| <= tol |b|.
#pragma once

#include <string>

#include "solvers/linear_operator.h"

namespace latke {

enum class SolverType { cg, cgne, cgnr, bicgstab, gcr, mr };

const char* to_string(SolverType t);
/// @brief cg, cgne, cgnr, bicgstab, gcr or mr; anything else is an error naming the value.
SolverType parse_solver_type(const std::string& name);

struct SolverParam {
  SolverType type = SolverType::bicgstab;
  double tol = 1e-10;    ///< on the true relative residual |b - A x| / |b|
  int max_iter = 10000;  ///< iterations (sloppy operator applications for the Krylov methods)
  double delta = 0.1;    ///< reliable update when the residual fell by this factor
  int restart = 16;      ///< GCR(k): directions kept before a restart
};

struct SolverStats {
  int iterations = 0;
  int reliable_updates = 0;
  long outer_applications = 0;   ///< of the double-precision operator
  long sloppy_applications = 0;  ///< of the sloppy operator (0 when it is the double one)
  double true_residual = 0;      ///< |b - A x| / |b| at the end, in double
  double seconds = 0;
  double flops = 0;              ///< operator flops (QUDA's counting), all ranks
  bool converged = false;
};

/// A preconditioner for flexible methods: out ~ A^-1 in, on fields of A's shape (double).
class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual void apply(ColorSpinorField& out, const ColorSpinorField& in) = 0;
  virtual std::string describe() const = 0;
};

/// @brief Solve A x = b. x holds the initial guess and receives the solution; x and b are
/// fields of A's shape and precision (double for the outer solve; multigrid's setup solves
/// in single). sloppy: the same operator in lower precision for the
/// iteration (nullptr: A itself). K: a preconditioner for GCR (nullptr: none). CG needs A
/// Hermitian positive definite; CGNE/CGNR solve A A^dag y = b, x = A^dag y / A^dag A x = A^dag b.
/// Fails on bad parameters; a solve that does not converge returns converged = false.
SolverStats solve(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K, ColorSpinorField& x,
                  const ColorSpinorField& b, const SolverParam& param);

}  // namespace latke
