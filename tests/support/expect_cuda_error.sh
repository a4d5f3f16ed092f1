#!/bin/sh
# With no CUDA device visible, -latke_backend cuda must fail naming the cause; with one it
# must run (the same test on a GPU host and in CI).
bench=$1
if nvidia-smi -L >/dev/null 2>&1; then
  exec "$bench" dslash -latke_backend cuda -latke_lattice 4,4,4,4 -latke_iterations 2
fi
exec "$(dirname "$0")/expect_failure.sh" "no CUDA device is visible" "$bench" dslash -latke_backend cuda
