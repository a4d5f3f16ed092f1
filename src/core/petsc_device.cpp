// PETSc's GPU and Latke's: device adoption and stream order (petsc_device.h). Host-side CUDA
// runtime and PETSc calls only, so ordinary C++ in every build.
#include "src/core/petsc_device.h"

#include <memory>

#include "src/core/error.h"

#if LATKE_PETSC_DEVICE
#include <cuda_runtime.h>
#include <petscdevice.h>
#endif

namespace latke::petsc {

namespace {

bool& petsc_on_cuda() {
  static bool on = false;
  return on;
}

#if LATKE_PETSC_DEVICE
void check(PetscErrorCode ierr, const char* call) {
  require(ierr == 0, call, " failed (PETSc error ", static_cast<int>(ierr), ")");
}

/// The stream of PETSc's current device context (PETSc's vector kernels run there).
Stream petsc_stream() {
  PetscDeviceContext dctx = nullptr;
  void* handle = nullptr;
  check(PetscDeviceContextGetCurrentContext(&dctx), "PetscDeviceContextGetCurrentContext");
  check(PetscDeviceContextGetStreamHandle(dctx, &handle), "PetscDeviceContextGetStreamHandle");
  return Stream{*static_cast<cudaStream_t*>(handle)};
}

/// Work queued later on `after` waits for the work queued so far on `before`, through one event
/// per direction (`which`), made once: a stream waits on the last record made before the wait
/// is queued, so an event can be recorded again right after.
void order(int which, Stream before, Stream after) {
  static std::unique_ptr<Event> e[2];
  if (!e[which]) e[which] = std::make_unique<Event>();
  e[which]->record(before);
  e[which]->wait(after);
}
#endif

}  // namespace

int adopt_petsc_cuda_device() {
#if LATKE_PETSC_DEVICE
  PetscDeviceContext dctx = nullptr;
  PetscDeviceType type = PETSC_DEVICE_HOST;
  check(PetscDeviceContextGetCurrentContext(&dctx), "PetscDeviceContextGetCurrentContext");
  check(PetscDeviceContextGetDeviceType(dctx, &type), "PetscDeviceContextGetDeviceType");
  petsc_on_cuda() = type == PETSC_DEVICE_CUDA;
  if (!petsc_on_cuda()) return -1;
  PetscDevice device = nullptr;
  PetscInt id = -1;
  check(PetscDeviceContextGetDevice(dctx, &device), "PetscDeviceContextGetDevice");
  check(PetscDeviceGetDeviceId(device, &id), "PetscDeviceGetDeviceId");
  return static_cast<int>(id);
#else
  return -1;
#endif
}

bool device_vectors(Backend b) { return device_path_compiled && b == Backend::cuda && petsc_on_cuda(); }

// Without the device path (a PETSc with CUDA older than 3.26) a device vector can still come
// from the user: whole-device synchronization is then the order.
void compute_waits_for_petsc() {
#if LATKE_PETSC_DEVICE
  order(0, petsc_stream(), compute_stream());
#else
  synchronize(Backend::cuda);
#endif
}

void petsc_waits_for_compute() {
#if LATKE_PETSC_DEVICE
  order(1, compute_stream(), petsc_stream());
#else
  synchronize(Backend::cuda);
#endif
}

}  // namespace latke::petsc
