// Internals shared by the C API's implementation files (latke.h): the boundary where C++
// exceptions become PETSc errors, argument checks, and the state LatkeInitialize sets up.
#pragma once

#include <petscsys.h>

#include <exception>
#include <new>

#include "src/core/backend.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

/// A PETSc error when a handle or pointer argument of a C API function is NULL.
#define LatkeCheckNull(arg) \
  PetscCheck((arg) != NULL, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s: argument %s is NULL", PETSC_FUNCTION_NAME, #arg)

namespace latke::petsc {

/// Run body; a C++ exception becomes a PETSc error on comm carrying its message.
template <typename F>
PetscErrorCode guarded(MPI_Comm comm, F&& body) {
  try {
    body();
  } catch (const std::bad_alloc&) {
    SETERRQ(comm, PETSC_ERR_MEM, "out of host memory: an allocation failed (%s)", latke::memory_report().c_str());
  } catch (const std::exception& e) {
    SETERRQ(comm, PETSC_ERR_USER_INPUT, "%s", e.what());
  }
  return 0;
}

/// The process grid from -latke_grid as LatkeInitialize read it (zeros: chosen).
Coords default_grid();
/// The backend LatkeInitialize activated; fails when Latke is not initialized.
Backend run_backend();
/// Fails with a clear message unless LatkeInitialize has run.
void require_initialized();

}  // namespace latke::petsc
