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

int main(int argc, char **argv)
{
  LatkeGauge U;
  Mat        A, M;
  Vec        x, b, xhat, bhat, r;
  KSP        ksp;
  PetscInt   site[4] = {0, 0, 0, 0}, its;
  PetscReal  res, bnorm;
  KSPConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(LatkeInitialize());

  /* -latke_lattice, -latke_gauge, ...; operator parameters -latke_mass, -latke_csw, ... */
  PetscCall(LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, NULL, &U));
  PetscCall(MatCreateLatkeWilsonClover(U, LATKE_OPERATOR_EVEN_ODD, NULL, NULL, &A));
  PetscCall(MatLatkeCreateCompanion(A, LATKE_OPERATOR_FULL, &M));

  PetscCall(MatLatkeCreateFullVecs(A, &x, &b));
  PetscCall(MatCreateVecs(A, &xhat, &bhat));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(LatkeVecSetPointSource(A, b, site, 0, 0));
  PetscCall(MatLatkePrepareSource(A, b, bhat));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 5000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, bhat, xhat));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetIterationNumber(ksp, &its));

  /* The full solution and its residual with the full operator. */
  PetscCall(MatLatkeReconstruct(A, xhat, b, x));
  PetscCall(MatMult(M, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &res));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "embed_in_petsc: %s after %d iterations, true residual %.3e\n",
                        KSPConvergedReasons[reason], (int)its, (double)(res / bnorm)));

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
  PetscCall(PetscFinalize());
  return reason > 0 ? 0 : 1;
}
