// LatkeInitialize, LatkeFinalize and the run state of the C API (latke.h).
#include "petsc/c_api.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/tune.h"
#include "latke/latke.h"

namespace latke::petsc {

namespace {
struct State {
  bool initialized = false;
  RunOptions run;
};
State& state() {
  static State s;
  return s;
}

}  // namespace

void require_initialized() {
  require(state().initialized, "Latke is not initialized: call LatkeInitialize() after PetscInitialize()");
}

Coords default_grid() { return state().run.grid; }

Backend run_backend() {
  require_initialized();
  return state().run.backend;
}

}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeInitialize(void) {
  PetscFunctionBeginUser;
  if (state().initialized) PetscFunctionReturn(0);
  PetscCall(guarded(PETSC_COMM_WORLD, [] {
    state().run = setup_from_options(PETSC_COMM_WORLD);
    state().initialized = true;
  }));
  PetscCall(PCRegister(PCLATKESCHWARZ, PCCreate_LatkeSchwarz));
  PetscCall(PCRegister(PCLATKEMG, PCCreate_LatkeMG));
  // PetscFinalize finalizes Latke too, so that a program that never calls LatkeFinalize still
  // keeps what the autotuner chose (LATKE_RESOURCE_PATH); after an explicit LatkeFinalize this
  // second call has nothing left to do.
  PetscCall(PetscRegisterFinalize(LatkeFinalize));
  PetscFunctionReturn(0);
}

// PETSc calls this when a program loads liblatke itself (-dll_append /path/liblatke.so, or
// -dll_prepend): Latke is initialized there (its options read, the backend activated, the PC
// types latke_mg and latke_schwarz registered) and finalized by PetscFinalize, so a PETSc
// program that never calls Latke can still take -pc_type latke_mg.
PetscErrorCode PetscDLLibraryRegister_latke(void) {
  PetscFunctionBeginUser;
  PetscCall(LatkeInitialize());
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGetVersion(int* major, int* minor, int* patch) {
  PetscFunctionBeginUser;
  if (major) *major = LATKE_VERSION_MAJOR;  // the header the library was built with
  if (minor) *minor = LATKE_VERSION_MINOR;
  if (patch) *patch = LATKE_VERSION_PATCH;
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGetBackend(const char** name) {
  PetscFunctionBeginUser;
  LatkeCheckNull(name);
  PetscCall(guarded(PETSC_COMM_WORLD, [&] { *name = to_string(run_backend()); }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeFinalize(void) {
  PetscFunctionBeginUser;
  PetscCall(guarded(PETSC_COMM_WORLD, [] {
    if (state().initialized) synchronize(state().run.backend);
    state().initialized = false;
    int rank = 0;
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
    if (rank == 0) save_tune_cache();  // LATKE_RESOURCE_PATH
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
