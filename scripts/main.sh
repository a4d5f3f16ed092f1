#!/usr/bin/env bash
# The main job: install what is missing, build, and run latke-solve on the default problem
# (an 8^4 Wilson-clover solve through PETSc, on the GPU when there is one). Options after
# the script name go to latke-solve, e.g.
#   scripts/main.sh -latke_lattice 16,16,16,32 -ksp_type fgmres -ksp_monitor -log_view
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec "${LATKE_BUILD_DIR:-$root/build}/bin/latke-solve" "$@"
