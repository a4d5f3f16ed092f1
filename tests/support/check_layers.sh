#!/bin/sh
# check_layers.sh SOURCE_DIR: the layering rule of docs/architecture.md. Nothing below petsc/
# (src/, operators/, solvers/, preconditioners/, include/latke/ but latke.h) includes PETSc's
# KSP or PC headers, the C API (latke/latke.h), or anything from petsc/. Prints each breach.
cd "$1" || exit 2
breaches=$(grep -rnE '#include *[<"](petscksp\.h|petscpc\.h|petsc/private/(pc|ksp)impl\.h|latke/latke\.h|petsc/[a-z_]+\.h)' \
             src operators solvers preconditioners include --include='*.h' --include='*.cpp' --include='*.c' \
           | grep -v '^include/latke/latke\.h:')
if [ -n "$breaches" ]; then
  echo "includes that point up from below petsc/ (docs/architecture.md):"
  echo "$breaches"
  exit 1
fi
echo "layers: no file below petsc/ includes PETSc's KSP/PC headers, latke/latke.h or petsc/"
