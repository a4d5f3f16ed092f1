/* embed_in_petsc: the pattern an existing PETSc code copies to use a Latke operator.
 *
 * A plain C PETSc program: it makes a gauge field from options, the even-odd Wilson-clover
 * operator as a Mat, a point source, and solves with whatever KSP and PC the options
 * database names (-ksp_type, -pc_type, -ksp_monitor, ...), then checks the full solution's
 * true residual. Build it against an installed Latke with CMake (find_package(Latke),
 * target Latke::latke) or pkg-config (pkg-config --cflags --libs latke). */
#include <petscksp.h>

#include <latke/latke.h>

static const char help[] = "Solve the Wilson-clover equation with a Latke operator and a PETSc KSP.\n";

/* The solve; *ok is set when the full solution's true residual met the tolerance. Errors are
 * returned, so that main still finalizes PETSc and MPI. */
static PetscErrorCode solve(PetscBool *ok)
{
  LatkeGauge U;
  Mat        A, M;
  Vec        x, b, xhat, bhat, r;
  KSP        ksp;
  PetscInt   site[4] = {0, 0, 0, 0}, its, pass;
  PetscReal  res, bnorm, rtol, step;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(LatkeInitialize());

  /* -latke_lattice, -latke_gauge, ...; operator parameters -latke_mass, -latke_csw, ... */
  PetscCall(LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, NULL, &U));
  PetscCall(MatCreateLatkeWilsonClover(U, LATKE_OPERATOR_EVEN_ODD, NULL, NULL, &A));
  /* The check's operator: the full form, in double precision whatever A stores. */
  PetscCall(MatLatkeCreateReference(A, LATKE_OPERATOR_FULL, &M));

  PetscCall(MatLatkeCreateFullVecs(A, &x, &b));
  PetscCall(MatCreateVecs(A, &xhat, &bhat));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(LatkeVecSetPointSource(A, b, site, 0, 0));
  PetscCall(MatLatkePrepareSource(A, b, bhat));
  PetscCall(VecNorm(b, NORM_2, &bnorm));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 5000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPGetTolerances(ksp, &rtol, NULL, NULL, NULL));

  /* A KSP's tolerance is on the even-odd system's residual, in the KSP's own norm; what
   * counts is the full solution's residual with the full operator. Where the KSP converged
   * but that residual is still above the tolerance, solve on from the solution with a
   * tighter tolerance (at most twice). */
  step = rtol;
  for (pass = 0;; ++pass) {
    PetscCall(KSPSolve(ksp, bhat, xhat));
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(MatLatkeReconstruct(A, xhat, b, x));
    PetscCall(MatMult(M, x, r));
    PetscCall(VecAYPX(r, -1.0, b));
    PetscCall(VecNorm(r, NORM_2, &res));
    res /= bnorm;
    if (res <= rtol || pass == 2 || !(reason == KSP_CONVERGED_RTOL || reason == KSP_CONVERGED_ATOL)) break;
    step *= PetscMax(0.01, 0.5 * rtol / res);
    PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE));
    PetscCall(KSPSetTolerances(ksp, step, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
  }
  *ok = reason > 0 && res <= rtol ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "embed_in_petsc: %s after %d iterations, true residual %.3e (tolerance %.1e)%s\n",
                        KSPConvergedReasons[reason], (int)its, (double)res, (double)rtol,
                        *ok ? "" : ": NOT converged"));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&xhat));
  PetscCall(VecDestroy(&bhat));
  PetscCall(MatDestroy(&M));
  PetscCall(MatDestroy(&A));
  PetscCall(LatkeGaugeDestroy(&U));
  PetscCall(LatkeFinalize());
  PetscFunctionReturn(0);
}

/* Exit status: 0 only when the true residual met the tolerance; 1 on an error, 2 when the
 * solve did not converge. */
int main(int argc, char **argv)
{
  PetscBool      ok = PETSC_FALSE;
  PetscErrorCode ierr;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  ierr = solve(&ok);
  PetscCall(PetscFinalize());
  return ierr ? 1 : ok ? 0 : 2;
}
