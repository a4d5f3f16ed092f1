#!/usr/bin/env bash
# Configures and builds Latke into build/ (Release; CUDA for sm_90 when nvcc is found).
# Extra arguments go to CMake, e.g. -DLATKE_ENABLE_CUDA=OFF or -DCMAKE_CUDA_ARCHITECTURES=80.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LATKE_BUILD_DIR:-$root/build}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$(nproc)"
