// Latke's preconditioners are variable: their MR, GCR and BiCGstab steps take inner products
// of the vector they are applied to, so two applications are not one linear map. A Krylov
// method that assumes a fixed preconditioner (GMRES, BiCGstab, CG, TFQMR, ...) then builds a
// wrong recurrence and can report convergence on a wrong solution. Their PCPreSolve refuses
// such a method before the solve starts and names the flexible ones.
#pragma once

#include <petscksp.h>

namespace latke::petsc {

/// @brief Fails (PETSC_ERR_ARG_INCOMP) unless ksp's method is flexible or applies the
/// preconditioner alone: fgmres, gcr, fcg, fbcgs, fbcgsr, pipefgmres, pipegcr, pipefcg,
/// richardson or preonly. pc_type names the preconditioner in the message.
PetscErrorCode require_flexible_ksp(PC pc, KSP ksp, const char* pc_type);

}  // namespace latke::petsc
