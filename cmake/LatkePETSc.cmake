# PETSc through pkg-config (Debian's libpetsc-complex-dev, 3.18, or any PETSc whose PETSc.pc
# is on PKG_CONFIG_PATH). Latke needs complex scalars: a real build stops here with how to fix it.
if(DEFINED ENV{PETSC_DIR})
  set(ENV{PKG_CONFIG_PATH} "$ENV{PETSC_DIR}/$ENV{PETSC_ARCH}/lib/pkgconfig:$ENV{PETSC_DIR}/lib/pkgconfig:$ENV{PKG_CONFIG_PATH}")
endif()
pkg_check_modules(PETSC IMPORTED_TARGET PETSc)
if(NOT PETSC_FOUND)
  message(FATAL_ERROR "PETSc not found through pkg-config (PETSc.pc). On Debian 12 install it with "
                      "'apt-get install libpetsc-complex-dev' (scripts/install-deps.sh does this), or "
                      "set PETSC_DIR/PETSC_ARCH or PKG_CONFIG_PATH to a complex-scalar PETSc.")
endif()
find_file(LATKE_PETSCCONF petscconf.h PATHS ${PETSC_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT LATKE_PETSCCONF)
  message(FATAL_ERROR "PETSc ${PETSC_VERSION} found, but not its petscconf.h in: ${PETSC_INCLUDE_DIRS}")
endif()
file(STRINGS "${LATKE_PETSCCONF}" latke_petsc_complex REGEX "^#define PETSC_USE_COMPLEX 1")
if(NOT latke_petsc_complex)
  message(FATAL_ERROR "PETSc ${PETSC_VERSION} at ${LATKE_PETSCCONF} is built with real scalars; "
                      "Latke needs complex scalars (the Dirac operator is complex). On Debian: "
                      "'apt-get install libpetsc-complex-dev' and select it with "
                      "'update-alternatives --set petsc /usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-complex', "
                      "or point PKG_CONFIG_PATH / PETSC_DIR+PETSC_ARCH at a PETSc configured "
                      "--with-scalar-type=complex.")
endif()
set(PETSC_SCALAR complex)

# Which PETSc, its version and whether it has CUDA (PETSC_HAVE_CUDA in its petscconf.h).
# From pkg_check_modules' cached answer, so that a reconfiguration without the environment
# that found this PETSc (PKG_CONFIG_PATH, PETSC_DIR) still describes the same one.
set(LATKE_PETSC_PREFIX "${PETSC_PREFIX}")
set(LATKE_PETSC_PCFILEDIR "${PETSC_LIBDIR}/pkgconfig")  # where programs built against Latke find it
file(STRINGS "${LATKE_PETSCCONF}" latke_petsc_cuda REGEX "^#define PETSC_HAVE_CUDA 1")
if(latke_petsc_cuda)
  set(PETSC_HAS_CUDA ON)
else()
  set(PETSC_HAS_CUDA OFF)
endif()
if(PETSC_HAS_CUDA AND LATKE_ENABLE_CUDA AND PETSC_VERSION VERSION_GREATER_EQUAL 3.26)
  set(LATKE_PETSC_VECTORS "device vectors (VECCUDA) with the CUDA backend")
elseif(PETSC_HAS_CUDA AND LATKE_ENABLE_CUDA)
  set(LATKE_PETSC_VECTORS "host vectors staged (Latke's device path needs PETSc >= 3.26, this is ${PETSC_VERSION})")
elseif(PETSC_HAS_CUDA)
  set(LATKE_PETSC_VECTORS "host vectors (Latke is built without CUDA)")
elseif(LATKE_ENABLE_CUDA)
  set(LATKE_PETSC_VECTORS "host vectors staged to the GPU (this PETSc has no CUDA)")
else()
  set(LATKE_PETSC_VECTORS "host vectors")
endif()
# PETSc's HDF5 viewer API (petscviewerhdf5.h: groups, attributes) includes hdf5.h, whose
# directory PETSc's pkg-config file does not give; it is read from PETSc's petscvariables.
# Programs that write HDF5 groups (latke-propagator) use it where LATKE_HAVE_HDF5_VIEWER.
set(LATKE_HDF5_INCLUDE_DIRS "")
file(STRINGS "${LATKE_PETSCCONF}" latke_petsc_hdf5 REGEX "^#define PETSC_HAVE_HDF5 1")
find_file(LATKE_PETSCVARIABLES petscvariables PATHS ${PETSC_LIBDIR}/petsc/conf NO_DEFAULT_PATH)
if(latke_petsc_hdf5 AND LATKE_PETSCVARIABLES)
  file(STRINGS "${LATKE_PETSCVARIABLES}" latke_hdf5_line REGEX "^HDF5_INCLUDE *=")
  string(REGEX MATCHALL "-I[^ ]+" latke_hdf5_flags "${latke_hdf5_line}")
  foreach(flag ${latke_hdf5_flags})
    string(SUBSTRING "${flag}" 2 -1 dir)
    list(APPEND LATKE_HDF5_INCLUDE_DIRS "${dir}")
  endforeach()
  find_file(LATKE_HDF5_H hdf5.h PATHS ${LATKE_HDF5_INCLUDE_DIRS} /usr/include NO_DEFAULT_PATH)
endif()
message(STATUS "Latke: PETSc ${PETSC_VERSION} at ${LATKE_PETSC_PREFIX} (${PETSC_SCALAR} scalars, CUDA: ${PETSC_HAS_CUDA}); "
               "Latke matrices use ${LATKE_PETSC_VECTORS}")
