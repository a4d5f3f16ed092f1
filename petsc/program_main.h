// The main() of Latke's single-command PETSc programs (latke-solve, latke-propagator):
// PetscInitialize, the program's run, the report of options nobody read, PetscFinalize.
#pragma once

#include <petscsys.h>

#include <exception>

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

}  // namespace latke::petsc
