// The one place where the PETSc versions Latke builds against differ: Debian's 3.18 (host
// only; CI) and the current release built with CUDA by scripts/build-petsc-cuda.sh (3.26.1).
// Signatures that changed between them are taken from PETSc's own declarations (decltype),
// so that any release in between compiles the same way; what cannot be derived so is keyed
// on PETSC_VERSION_GE and says which versions were tested.
#pragma once

#include <petscmat.h>
#include <petscversion.h>

#include <type_traits>

namespace latke::petsc::compat {

namespace detail {
template <typename R, typename A0, typename... A>
A0 first_argument(R (*)(A0, A...));
template <typename R, typename A0, typename A1, typename A2, typename... A>
A2 third_argument(R (*)(A0, A1, A2, A...));
}  // namespace detail

/// What PetscOptionsBegin() hands to the option readers and PCSetFromOptions_*(): a
/// `PetscOptionItems *` in 3.18, a `PetscOptionItems` (itself a pointer type) since 3.2x.
using OptionItems = decltype(detail::first_argument(&PetscOptionsString_Private));

/// @brief A real option inside PetscOptionsBegin/End: PetscOptionsReal_Private() took no
/// bounds in 3.18 and takes a lower and an upper one in 3.26 (here: none). A template, so
/// that only the call matching this PETSc is compiled.
template <typename Items = OptionItems>
PetscErrorCode options_real(Items items, const char* name, const char* help, const char* man, PetscReal current,
                            PetscReal* value, PetscBool* set) {
  using F = decltype(&PetscOptionsReal_Private);
  if constexpr (std::is_invocable_v<F, Items, const char*, const char*, const char*, PetscReal, PetscReal*,
                                    PetscBool*, PetscReal, PetscReal>)
    return PetscOptionsReal_Private(items, name, help, man, current, value, set, PETSC_MIN_REAL, PETSC_MAX_REAL);
  else
    return PetscOptionsReal_Private(items, name, help, man, current, value, set);
}

/// The function type MatShellSetOperation() takes: `void (*)(void)` in 3.18,
/// `PetscErrorCodeFn *` in 3.26.
using ShellOperation = decltype(detail::third_argument(&MatShellSetOperation));

/// @brief The context a destroy callback (MatShellSetContextDestroy) was given: 3.18 passes
/// the context, releases with PetscCtxDestroyFn (3.26) pass the address of the context
/// pointer. Both are declared `void *`, so only this tells them apart.
template <typename T>
T* destroyed_context(void* arg);

/// The type of PetscErrorMessage()'s specific message: `char *` in 3.18, `const char *` in 3.26.
using ErrorMessageText = std::remove_pointer_t<decltype(detail::third_argument(&PetscErrorMessage))>;

/// @brief A MATSHELL operation as MatShellSetOperation() takes it.
template <typename F>
ShellOperation shell_operation(F* f) {
  return reinterpret_cast<ShellOperation>(f);
}

/// @brief Log flops done by kernels on the GPU: as GPU flops where PETSc counts them (a PETSc
/// with a device; -log_view then shows them in the GPU columns), as flops otherwise (a
/// host-only PETSc's PetscLogGpuFlops() discards its argument).
inline PetscErrorCode log_gpu_flops(PetscLogDouble ops) {
#if defined(PETSC_HAVE_DEVICE)
  return PetscLogGpuFlops(ops);
#else
  return PetscLogFlops(ops);
#endif
}

/// @brief Add seconds of GPU time to PETSc's counter (shown by -log_view -log_view_gpu_time);
/// nothing where PETSc has no device.
inline PetscErrorCode log_gpu_time(PetscLogDouble seconds) {
#if defined(PETSC_HAVE_DEVICE)
  return PetscLogGpuTimeAdd(seconds);
#else
  (void)seconds;
  return 0;
#endif
}

namespace detail {
struct Missing {};
struct Any {
  template <typename T>
  Any(T) {}
};
}  // namespace detail

}  // namespace latke::petsc::compat

// Whether PETSc has PetscCtxDestroyDefault (the PetscCtxDestroyFn API): an overload that only
// a call PETSc's own declaration does not match can pick; declared, never defined.
latke::petsc::compat::detail::Missing PetscCtxDestroyDefault(latke::petsc::compat::detail::Any);

namespace latke::petsc::compat {

inline constexpr bool destroy_takes_context_address =
    !std::is_same_v<decltype(::PetscCtxDestroyDefault(static_cast<void**>(nullptr))), detail::Missing>;

template <typename T>
T* destroyed_context(void* arg) {
  if constexpr (destroy_takes_context_address)
    return *static_cast<T**>(arg);
  else
    return static_cast<T*>(arg);
}

}  // namespace latke::petsc::compat

// The device path (PETSc vectors in GPU memory, used in place by Latke's kernels) needs a
// PETSc with CUDA, a Latke with CUDA, and PETSc's device-context API as in 3.26
// (PetscDeviceContextGetStreamHandle returning a pointer to the cudaStream_t). Older PETSc
// releases with CUDA build too, but with host vectors staged through pinned buffers.
#if defined(PETSC_HAVE_CUDA) && defined(LATKE_HAVE_CUDA) && PETSC_VERSION_GE(3, 26, 0)
#define LATKE_PETSC_DEVICE 1
#else
#define LATKE_PETSC_DEVICE 0
#endif
