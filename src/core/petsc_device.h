// Latke's kernels and PETSc's vector kernels on one GPU (a PETSc built with CUDA): which
// device PETSc uses, whether Latke's matrices hand out device vectors, and the order between
// PETSc's stream (that of its current PetscDeviceContext) and Latke's compute stream. The
// order is kept with CUDA events recorded on one stream and waited on by the other, so the
// host never waits for either; see VecField (petsc/mat_shell.h) for where it is used.
#pragma once

#include "src/core/petsc_compat.h"
#include "src/core/backend.h"

namespace latke::petsc {

/// Whether this build has the device path (LATKE_PETSC_DEVICE: PETSc and Latke with CUDA).
constexpr bool device_path_compiled = LATKE_PETSC_DEVICE != 0;

/// @brief The CUDA device of PETSc's current device context (PETSc initializes it here), so
/// that Latke runs on the same one; -1 when PETSc has no CUDA or its device is not a CUDA GPU
/// (e.g. -device_enable none). Remembers the answer for device_vectors().
int adopt_petsc_cuda_device();

/// @brief Whether the PETSc vectors of Latke operators on backend b live on the GPU (VECCUDA):
/// the device path is compiled, b is CUDA and PETSc's device is the CUDA GPU Latke uses.
bool device_vectors(Backend b);

/// @brief Latke's compute stream waits for what PETSc has queued on its stream so far
/// (before Latke's kernels read or overwrite a device vector PETSc may still be writing or reading).
void compute_waits_for_petsc();

/// @brief PETSc's stream waits for what Latke has queued on its compute stream so far (before
/// PETSc's kernels touch a device vector Latke's kernels read or write).
void petsc_waits_for_compute();
// Without the device path both synchronize the whole device (a device vector can then only
// come from a PETSc with CUDA older than 3.26, created by the caller).

}  // namespace latke::petsc
