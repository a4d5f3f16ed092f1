/* A PETSc program that knows nothing of Latke: it creates a PC and takes its type from the
 * options. With -dll_append /path/liblatke.so PETSc loads Latke, whose
 * PetscDLLibraryRegister_latke registers latke_mg and latke_schwarz. */
#include <petscpc.h>

int main(int argc, char **argv) {
  PC pc;
  PCType type;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PCCreate(PETSC_COMM_WORLD, &pc));
  PetscCall(PCSetFromOptions(pc));
  PetscCall(PCGetType(pc, &type));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PC type: %s\n", type ? type : "(none)"));
  PetscCall(PCDestroy(&pc));
  PetscCall(PetscFinalize());
  return 0;
}
