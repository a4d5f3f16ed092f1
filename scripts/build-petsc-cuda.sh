#!/usr/bin/env bash
# Builds PETSc with CUDA for Latke's GPU-resident PETSc path, from a source tarball taken as an
# argument (no network needed: fetch it beforehand), into PREFIX.
#
#   scripts/build-petsc-cuda.sh TARBALL PREFIX [BUILD_DIR]
#
#   TARBALL    the PETSc source distribution, e.g. petsc-3.26.1.tar.gz, the `petsc` package's
#              on PyPI, fetched by name: pip download --no-deps --no-binary :all: petsc==3.26.1
#              (scripts/main.sh does this, and builds, on a GPU host whose PETSc has no CUDA)
#   PREFIX     where PETSc is installed (lib/libpetsc.so, include/, lib/pkgconfig/PETSc.pc)
#   BUILD_DIR  where it is unpacked and built (default: PREFIX.build); kept for inspection
#
# Configuration: complex double scalars, 32-bit indices, CUDA (arch LATKE_CUDA_ARCH, default
# 90, i.e. H100/H200; a comma list builds several), the system MPI (mpicc/mpicxx), the system
# BLAS/LAPACK (-lblas -llapack), no Fortran, no X, shared libraries, optimized (-O3, no
# debugging), no --download-*. CUDA is found from LATKE_CUDA_DIR, else CUDA_HOME, else the
# directory above `nvcc` on PATH, else /usr/local/cuda.
#
# Idempotent: PREFIX/share/latke-petsc-build.stamp records the PETSc version, the configure
# options and the nvcc version; when it matches, the script does nothing. Any other existing
# PREFIX content is left alone and overwritten by `make install`.
#
# Environment: LATKE_CUDA_ARCH (90), LATKE_CUDA_DIR, LATKE_PETSC_MAKE_NP (number of cores),
# LATKE_PETSC_EXTRA_CONFIGURE (more configure options, recorded in the stamp).
# Debian/Ubuntu packages it needs (python3, make, g++, OpenMPI, BLAS/LAPACK headers and
# libraries): `scripts/install-deps.sh --petsc-build`.
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { sed -n '2,26p' "$0" >&2; exit 2; }
tarball=$(realpath "$1")
prefix=$(realpath -m "$2")
build=$(realpath -m "${3:-$prefix.build}")
[ -f "$tarball" ] || { echo "build-petsc-cuda: no such tarball: $tarball" >&2; exit 2; }

arch=${LATKE_CUDA_ARCH:-90}
cuda=${LATKE_CUDA_DIR:-${CUDA_HOME:-}}
if [ -z "$cuda" ]; then
  if command -v nvcc >/dev/null; then cuda=$(dirname "$(dirname "$(command -v nvcc)")"); else cuda=/usr/local/cuda; fi
fi
[ -x "$cuda/bin/nvcc" ] || { echo "build-petsc-cuda: no nvcc at $cuda/bin/nvcc (set LATKE_CUDA_DIR or CUDA_HOME)" >&2; exit 1; }

missing=()
for tool in python3 make mpicc mpicxx; do command -v $tool >/dev/null || missing+=("$tool"); done
libs=$(ldconfig -p 2>/dev/null || true)  # whole: grep -q on a pipe can fail it by SIGPIPE (pipefail)
for lib in libblas.so liblapack.so; do
  grep -q "$lib " <<<"$libs" || [ -e "/usr/lib/x86_64-linux-gnu/$lib" ] || missing+=("$lib")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "build-petsc-cuda: missing ${missing[*]}; install them with 'scripts/install-deps.sh --petsc-build'" >&2
  echo "  (Debian/Ubuntu packages python3 make g++ openmpi-bin libopenmpi-dev libblas-dev liblapack-dev)" >&2
  exit 1
fi

# PETSc's version from the tarball's name (petsc-X.Y.Z.tar.gz), checked against the source below.
version=$(basename "$tarball" | sed -nE 's/^petsc-([0-9]+\.[0-9]+\.[0-9]+)\.tar\.gz$/\1/p')
[ -n "$version" ] || { echo "build-petsc-cuda: cannot read a version from $(basename "$tarball") (expected petsc-X.Y.Z.tar.gz)" >&2; exit 2; }

options=(
  --prefix="$prefix"
  --with-cc=mpicc --with-cxx=mpicxx --with-fc=0
  --with-scalar-type=complex --with-precision=double --with-64-bit-indices=0
  --with-cuda=1 --with-cuda-dir="$cuda" --with-cudac="$cuda/bin/nvcc" --with-cuda-arch="$arch"
  --with-blaslapack-lib="-llapack -lblas"
  --with-shared-libraries=1 --with-debugging=0
  COPTFLAGS=-O3 CXXOPTFLAGS=-O3 CUDAOPTFLAGS=-O3
  --with-x=0 --with-ssl=0 --with-hwloc=0
  --with-make-np="${LATKE_PETSC_MAKE_NP:-$(nproc)}"
)
# shellcheck disable=SC2206  # word splitting of the extra options is intended
if [ -n "${LATKE_PETSC_EXTRA_CONFIGURE:-}" ]; then options+=(${LATKE_PETSC_EXTRA_CONFIGURE}); fi
nvcc_version=$("$cuda/bin/nvcc" --version | tail -1)
stamp="$prefix/share/latke-petsc-build.stamp"
# The make parallelism does not change the result: it is left out of the stamp.
want=$(printf 'petsc %s\nnvcc %s\n' "$version" "$nvcc_version"; printf '%s\n' "${options[@]}" | grep -v '^--with-make-np=')
if [ -f "$stamp" ] && [ -f "$prefix/lib/libpetsc.so" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "build-petsc-cuda: $prefix already holds PETSc $version with CUDA (arch $arch); nothing to do"
  exit 0
fi

echo "build-petsc-cuda: PETSc $version, CUDA $cuda ($nvcc_version), arch $arch -> $prefix (build in $build)"
rm -rf "$build"
mkdir -p "$build"
tar -C "$build" -xzf "$tarball"
src="$build/petsc-$version"
[ -f "$src/configure" ] || { echo "build-petsc-cuda: $tarball has no petsc-$version/configure" >&2; exit 1; }
got=$(awk '/#define PETSC_VERSION_(MAJOR|MINOR|SUBMINOR)/{printf "%s%s", sep, $3; sep="."}' "$src/include/petscversion.h")
[ "$got" = "$version" ] || { echo "build-petsc-cuda: $tarball holds PETSc $got, not $version" >&2; exit 1; }

cd "$src"
export PETSC_DIR=$src PETSC_ARCH=arch-latke-cuda
unset PETSC_ARCH_DIR
python3 ./configure PETSC_ARCH=$PETSC_ARCH "${options[@]}"
make PETSC_DIR="$PETSC_DIR" PETSC_ARCH="$PETSC_ARCH" all
make PETSC_DIR="$PETSC_DIR" PETSC_ARCH="$PETSC_ARCH" install
mkdir -p "$(dirname "$stamp")"
printf '%s\n' "$want" > "$stamp"
echo "build-petsc-cuda: done; use it with PKG_CONFIG_PATH=$prefix/lib/pkgconfig (or PETSC_DIR=$prefix)"
