// What Latke's single-command PETSc programs (latke-solve, latke-propagator) share: their
// main() (PetscInitialize, the program's run, the report of options nobody read,
// PetscFinalize), the independent check of a solution and what they do when it misses.
#pragma once

#include <petscmat.h>
#include <petscsys.h>

#include <cmath>
#include <exception>
#include <string>

#include "latke/latke.h"
#include "src/core/options.h"

namespace latke::petsc {

/// @brief Runs run(status) between PetscInitialize (with help) and PetscFinalize and returns
/// the exit status: run's status where it set one (a solve that missed its tolerance), 1 where
/// run failed with a PETSc error, else PetscFinalize's. name: the program, for the warnings
/// about unused options.
inline int program_main(int argc, char** argv, const char* help, const char* name, PetscErrorCode (*run)(int&)) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr, help));
  int status = 0;
  if (run(status)) status = 1;
  try {
    warn_unused_options(name);
  } catch (const std::exception&) {  // a report, never a reason to fail
  }
  const PetscErrorCode fin = PetscFinalize();
  return status ? status : static_cast<int>(fin != 0);
}

/// @brief |b - r| / |b|; r may be overwritten. Host vectors: one pass over this rank's entries on the
/// program's threads (PETSc's host kernels run VecAYPX and two VecNorm as three passes on one
/// thread, several times the solve's own time for a large lattice's column). Vectors elsewhere (a
/// PETSc with CUDA): PETSc's kernels where they are.
inline PetscErrorCode relative_difference(Vec b, Vec r, double* res) {
  const PetscScalar *pb = nullptr, *pr = nullptr;
  PetscMemType tb, tr;
  PetscInt n = 0;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(b, &n));
  PetscCall(VecGetArrayReadAndMemType(b, &pb, &tb));
  PetscCall(VecGetArrayReadAndMemType(r, &pr, &tr));
  const bool host = PetscMemTypeHost(tb) && PetscMemTypeHost(tr);
  double sums[2] = {0, 0};  // |b - r|^2, |b|^2
  if (host) {
    double d2 = 0, b2 = 0;
#pragma omp parallel for reduction(+ : d2, b2)
    for (PetscInt i = 0; i < n; ++i) {
      const double re = PetscRealPart(pb[i]), im = PetscImaginaryPart(pb[i]);
      const double dr = re - PetscRealPart(pr[i]), di = im - PetscImaginaryPart(pr[i]);
      d2 += dr * dr + di * di;
      b2 += re * re + im * im;
    }
    sums[0] = d2;
    sums[1] = b2;
  }
  PetscCall(VecRestoreArrayReadAndMemType(r, &pr));
  PetscCall(VecRestoreArrayReadAndMemType(b, &pb));
  if (host) {
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, PetscObjectComm((PetscObject)b)));
    *res = std::sqrt(sums[0] / sums[1]);
  } else {
    PetscReal rn, bn;
    PetscCall(VecAYPX(r, -1.0, b));
    PetscCall(VecNorm(r, NORM_2, &rn));
    PetscCall(VecNorm(b, NORM_2, &bn));
    *res = rn / bn;
  }
  PetscFunctionReturn(0);
}

/// @brief |b - M x| / |b| for x, the full solution reconstructed from A's solution xhat and
/// the full source b, with M the full operator in double precision (MatLatkeCreateReference):
/// independent of the solver, it decides success. r: scratch of x's shape.
inline PetscErrorCode full_residual(Mat A, Mat M, Vec xhat, Vec b, Vec x, Vec r, double* res) {
  PetscFunctionBeginUser;
  PetscCall(MatLatkeReconstruct(A, xhat, b, x));
  PetscCall(MatMult(M, x, r));
  PetscCall(relative_difference(b, r, res));
  PetscFunctionReturn(0);
}

/// A solve checked by full_residual, and its passes (solve_on).
struct SolveChecked {
  bool converged = false;  ///< by the solver's own test, after the last pass
  long iterations = 0;     ///< all passes
  int passes = 0;          ///< solves after the first
  double residual = 0;     ///< full_residual after the last pass
  bool met(double tol) const { return converged && residual <= tol; }
};

/// @brief What the programs do where a solve converged by its own test (on A's even-odd system,
/// in its own norm) but the full solution's residual is still above tol: solve on from the
/// solution with the solver's tolerance tightened by what the last pass missed by (0.5 tol /
/// residual, at most 100 times a pass), at most twice, each pass printed as "<what>: true
/// residual .. above the tolerance ..: solving on from the solution with <name> ..".
/// s: the first solve's outcome on entry. first: its solver tolerance. solve(t, &converged,
/// &iterations) solves on from the solution to tolerance t; residual(&r) measures the full
/// residual again.
template <class Solve, class Residual>
PetscErrorCode solve_on(const std::string& what, const char* name, double tol, double first, Solve&& solve,
                        Residual&& residual, SolveChecked& s) {
  PetscFunctionBeginUser;
  double step = first;
  while (s.converged && s.residual > tol && s.passes < 2) {
    step *= std::fmax(0.01, 0.5 * tol / s.residual);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "%s: true residual %.3e above the tolerance %.1e: solving on from the solution with %s "
                          "%.2e\n",
                          what.c_str(), s.residual, tol, name, step));
    bool converged = false;
    long iterations = 0;
    PetscCall(solve(step, &converged, &iterations));
    s.converged = converged;
    s.iterations += iterations;
    ++s.passes;
    PetscCall(residual(&s.residual));
  }
  PetscFunctionReturn(0);
}

}  // namespace latke::petsc
