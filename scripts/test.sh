#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (ctest). On a GPU host the
# same tests also run on the CUDA backend. Arguments go to ctest, e.g. -L mpi. Tests run side by
# side on the host's cores (each declares the processes it starts: PROCESSORS).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "${LATKE_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
