#!/usr/bin/env bash
# The main job: install what is missing, build, and run latke-bench dslash on a small
# lattice (on the GPU when there is one). Options after the script name go to latke-bench,
# e.g. scripts/main.sh -latke_lattice 32,32,32,64 -latke_precision double,single,half
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec "${LATKE_BUILD_DIR:-$root/build}/bin/latke-bench" dslash -latke_lattice 8,8,8,16 -latke_precision double,single,half "$@"
