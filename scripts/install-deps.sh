#!/usr/bin/env bash
# Installs what Latke needs and is missing, from Debian's (or Ubuntu's) packages: a C++
# toolchain, CMake, pkg-config, OpenMPI, Eigen, GoogleTest, PETSc with complex scalars, zlib, nlohmann-json,
# matplotlib (python3-matplotlib) for latke-scale's reports, petsc4py (python3-petsc4py-complex)
# for the latke Python package, and OpenBLAS (libopenblas-dev: the CPU backend's dense LAPACK).
# CUDA is used when nvcc is already installed (it is not installed here). Idempotent: does
# nothing when everything is present.
#   install-deps.sh                 what Latke needs
#   install-deps.sh --petsc-build   what scripts/build-petsc-cuda.sh needs (no Debian PETSc),
#                                   and pip to fetch PETSc's source by name where python3 has none
set -euo pipefail
packages=(g++ make cmake pkg-config openmpi-bin libopenmpi-dev libeigen3-dev libgtest-dev libpetsc-complex-dev
          zlib1g-dev nlohmann-json3-dev python3-matplotlib python3-petsc4py-complex libopenblas-dev)
if [ "${1:-}" = --petsc-build ]; then
  packages=(python3 make g++ openmpi-bin libopenmpi-dev libblas-dev liblapack-dev)
  python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
elif [ $# -ne 0 ]; then
  echo "usage: $0 [--petsc-build]" >&2; exit 2
fi
missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all of ${packages[*]} are installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
