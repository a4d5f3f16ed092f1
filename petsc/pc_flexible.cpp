// The check that a Krylov method can take one of Latke's variable preconditioners.
#include "petsc/pc_flexible.h"

namespace latke::petsc {

PetscErrorCode require_flexible_ksp(PC pc, KSP ksp, const char* pc_type) {
  PetscBool flexible = PETSC_FALSE;
  KSPType type = nullptr;
  const char* prefix = nullptr;
  PetscFunctionBeginUser;
  if (!ksp) PetscFunctionReturn(0);
  PetscCall(PetscObjectTypeCompareAny(reinterpret_cast<PetscObject>(ksp), &flexible, KSPFGMRES, KSPGCR, KSPFCG,
                                      KSPFBCGS, KSPFBCGSR, KSPPIPEFGMRES, KSPPIPEGCR, KSPPIPEFCG, KSPRICHARDSON,
                                      KSPPREONLY, ""));
  if (flexible) PetscFunctionReturn(0);
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(KSPGetOptionsPrefix(ksp, &prefix));
  SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), PETSC_ERR_ARG_INCOMP,
          "-%sksp_type %s cannot use -%spc_type %s: Latke's preconditioners are variable (their inner iterations "
          "take inner products), and %s assumes a fixed preconditioner, so it could report convergence on a wrong "
          "solution. Use a flexible method: -%sksp_type fgmres, gcr, fbcgs or richardson (also fcg for Hermitian "
          "positive definite operators, pipefgmres, pipegcr, fbcgsr)",
          prefix ? prefix : "", type, prefix ? prefix : "", pc_type, type, prefix ? prefix : "");
}

}  // namespace latke::petsc
