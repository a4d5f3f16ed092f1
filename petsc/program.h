// What Latke's single-command PETSc programs (latke-solve, latke-propagator) share: their
// main() (PetscInitialize, the program's run, the report of options nobody read,
// PetscFinalize) and the independent check of a solution.
#pragma once

#include <petscmat.h>
#include <petscsys.h>

#include <exception>

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

/// @brief |b - M x| / |b| for x, the full solution reconstructed from A's solution xhat and
/// the full source b, with M the full operator in double precision (MatLatkeCreateReference):
/// independent of the solver, it decides success. r: scratch of x's shape.
inline PetscErrorCode full_residual(Mat A, Mat M, Vec xhat, Vec b, Vec x, Vec r, double* res) {
  PetscReal rn, bn;
  PetscFunctionBeginUser;
  PetscCall(MatLatkeReconstruct(A, xhat, b, x));
  PetscCall(MatMult(M, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rn));
  PetscCall(VecNorm(b, NORM_2, &bn));
  *res = rn / bn;
  PetscFunctionReturn(0);
}

}  // namespace latke::petsc
