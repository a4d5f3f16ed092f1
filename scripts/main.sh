#!/usr/bin/env bash
# The main job: install what is missing, build, and run latke-solve on the default problem
# (an 8^4 Wilson-clover solve through PETSc, on the GPU when there is one). Options after
# the script name go to latke-solve, e.g.
#   scripts/main.sh -latke_lattice 16,16,16,32 -ksp_type fgmres -ksp_monitor -log_view
#
# On a GPU host (nvcc works and `nvidia-smi -L` lists a GPU) whose PETSc has no CUDA, it first
# gets a PETSc 3.26.1 built with CUDA, so that PETSc's vectors live on the GPU: the one cached
# in LATKE_PETSC_CUDA_DIR (default ~/.cache/latke/petsc-cuda-3.26.1), else one built there once
# by scripts/build-petsc-cuda.sh on all cores, from the `petsc` source distribution fetched by
# package name (pip download) or given as LATKE_PETSC_TARBALL. Latke is then built against it
# in build-cuda-petsc/ (LATKE_BUILD_DIR if set); build/ keeps the host PETSc's. Where a step
# fails it says why in one line and builds against the host PETSc as without a GPU.
# LATKE_PETSC_CUDA=0 skips the attempt. LATKE_MAIN_DRY_RUN=1 makes the checks and the download,
# says what it would install, build and run, and stops.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dry=${LATKE_MAIN_DRY_RUN:-0}
petsc_version=3.26.1

# Runs "$@", or in a dry run says it would.
step() { if [ "$dry" = 1 ]; then echo "main: dry run: would run $*"; else "$@"; fi; }

# Says in one line why the PETSc with CUDA is not used; the build goes on with the host PETSc.
fall_back() {
  echo "main: $*; building against the host PETSc instead (PETSc's vectors staged to the GPU;" \
    "LATKE_PETSC_CUDA=0 skips this attempt)" >&2
}

# Whether the PETSc CMake finds (PETSc.pc through pkg-config, PETSC_DIR/PETSC_ARCH first, as in
# cmake/LatkePETSc.cmake) has CUDA.
petsc_has_cuda() {
  local path=${PKG_CONFIG_PATH:-} flags dir
  if [ -n "${PETSC_DIR:-}" ]; then path=$PETSC_DIR/${PETSC_ARCH:-}/lib/pkgconfig:$PETSC_DIR/lib/pkgconfig:$path; fi
  flags=$(PKG_CONFIG_PATH=$path pkg-config --cflags-only-I PETSc 2>/dev/null) || return 1
  for dir in $flags; do
    grep -qs '^#define PETSC_HAVE_CUDA 1' "${dir#-I}/petscconf.h" && return 0
  done
  return 1
}

# Sets cuda_petsc to the prefix of a PETSc built with CUDA where this is a GPU host whose PETSc
# has none, building it once if need be; returns 1, with one line saying why where a step
# failed, when the host PETSc is to be used.
cuda_petsc=""
get_cuda_petsc() {
  [ "${LATKE_PETSC_CUDA:-1}" != 0 ] || return 1
  nvidia-smi -L 2>/dev/null | grep '^GPU ' >/dev/null || return 1
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version >/dev/null 2>&1 || return 1
  petsc_has_cuda && return 1

  local prefix src tarball log np minutes
  prefix=$(realpath -m "${LATKE_PETSC_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/latke/petsc-cuda-$petsc_version}")
  if [ -f "$prefix/lib/libpetsc.so" ] && grep -qsx "petsc $petsc_version" "$prefix/share/latke-petsc-build.stamp"; then
    echo "main: using PETSc $petsc_version with CUDA from $prefix"
    cuda_petsc=$prefix
    return 0
  fi
  log=$prefix.log
  src=$(dirname "$prefix")/src
  mkdir -p "$src" || { fall_back "cannot create $src"; return 1; }
  if [ -f "$prefix.failed" ]; then
    fall_back "building PETSc $petsc_version with CUDA into $prefix failed before (log: $log; remove $prefix.failed to try again)"
    return 1
  fi
  echo "main: the PETSc found has no CUDA: getting PETSc $petsc_version with CUDA (LATKE_PETSC_CUDA=0 skips this)"
  tarball=${LATKE_PETSC_TARBALL:-$src/petsc-$petsc_version.tar.gz}
  if [ -n "${LATKE_PETSC_TARBALL:-}" ] && [ ! -f "$tarball" ]; then
    fall_back "LATKE_PETSC_TARBALL=$tarball is not a file"
    return 1
  fi
  step "$root/scripts/install-deps.sh" --petsc-build ||
    { fall_back "could not install what building PETSc needs (scripts/install-deps.sh --petsc-build)"; return 1; }
  if [ ! -f "$tarball" ]; then
    echo "main: fetching the petsc $petsc_version source distribution by name (pip download) into $src"
    if ! python3 -m pip download --quiet --no-deps --no-binary :all: "petsc==$petsc_version" -d "$src" \
      >"$src/pip.log" 2>&1 || [ ! -f "$tarball" ]; then
      fall_back "could not download petsc==$petsc_version with pip (no network, or no pip? $src/pip.log)"
      return 1
    fi
  fi

  np=${LATKE_PETSC_MAKE_NP:-$(nproc)}
  [[ "$np" =~ ^[1-9][0-9]*$ ]] || np=$(nproc)
  minutes=$((3 + 30 / np))  # configure runs on one core, make on all: about 20 minutes on two
  echo "main: building PETSc $petsc_version with CUDA once into $prefix (about $minutes minutes on $np cores; log: $log)"
  if [ "$dry" = 1 ]; then
    step env LATKE_PETSC_MAKE_NP="$np" "$root/scripts/build-petsc-cuda.sh" "$tarball" "$prefix"
  elif LATKE_PETSC_MAKE_NP=$np "$root/scripts/build-petsc-cuda.sh" "$tarball" "$prefix" >"$log" 2>&1; then
    rm -rf "$prefix.build"  # the installed PETSc needs nothing from its build tree
  else
    # Not tried again on every run (minutes each): the marker stops it until removed.
    echo "$tarball" >"$prefix.failed"
    fall_back "building PETSc $petsc_version with CUDA failed (the end of $log says why)"
    return 1
  fi
  cuda_petsc=$prefix
}

step "$root/scripts/install-deps.sh"
build=""
if get_cuda_petsc; then
  build=${LATKE_BUILD_DIR:-$root/build-cuda-petsc}
  # CMake keeps the PETSc it found first (pkg-config's answer is cached): another one, anew.
  was=$(sed -n 's/^PETSC_PREFIX:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$was" ] && [ "$was" != "$cuda_petsc" ]; then
    echo "main: $build was configured against the PETSc in $was: configuring it anew"
    step rm -f "$build/CMakeCache.txt"
  fi
  echo "main: building Latke against PETSc $petsc_version with CUDA in $build"
  if step env -u PETSC_DIR -u PETSC_ARCH PKG_CONFIG_PATH="$cuda_petsc/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
    LATKE_BUILD_DIR="$build" "$root/scripts/build.sh"; then
    # A PETSc with CUDA aborts at GPU start-up under an MPI that is not CUDA-aware (Debian's
    # OpenMPI) unless told -use_gpu_aware_mpi 0, which costs nothing in a solve (docs/petsc.md).
    if ! ompi_info --parsable --all 2>/dev/null | grep 'mpi_built_with_cuda_support:value:true' >/dev/null &&
      [[ "${PETSC_OPTIONS:-}" != *use_gpu_aware_mpi* ]]; then
      export PETSC_OPTIONS="${PETSC_OPTIONS:+$PETSC_OPTIONS }-use_gpu_aware_mpi 0"
    fi
  else
    fall_back "building Latke against the PETSc in $cuda_petsc failed"
    build=""
  fi
fi
if [ -z "$build" ]; then
  step "$root/scripts/build.sh"
  build=${LATKE_BUILD_DIR:-$root/build}
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$dry" = 1 ]; then
  echo "main: dry run: would run ${PETSC_OPTIONS:+PETSC_OPTIONS=\"$PETSC_OPTIONS\" }$build/bin/latke-solve $*"
  exit 0
fi
exec "$build/bin/latke-solve" "$@"
