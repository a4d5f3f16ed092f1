#!/bin/sh
# check_layers.sh SOURCE_DIR: the layering rules of docs/architecture.md. Arrows point down
# only: src/ (core, fields) < operators/ < solvers/ < preconditioners/ < petsc/, and
# spectroscopy/ (contractions of fields) sits on src/ alone. Nothing below
# petsc/ includes PETSc's KSP or PC headers, the C API (latke/latke.h) or anything from
# petsc/; and every quoted include is a path from one of the two include roots (the source
# tree, or include/ for what is installed). Prints each breach.
cd "$1" || exit 2
status=0
breach() {  # breach RULE GREP-OUTPUT
  if [ -n "$2" ]; then
    echo "$1:"; echo "$2"; status=1
  fi
}
code='--include=*.h --include=*.cpp --include=*.c'
breach "includes that point up from below petsc/ (docs/architecture.md)" "$(
  grep -rnE '#include *[<"](petscksp\.h|petscpc\.h|petsc/private/(pc|ksp)impl\.h|latke/latke\.h|petsc/[a-z_]+\.h)' \
       src operators solvers preconditioners spectroscopy include $code | grep -v '^include/latke/latke\.h:')"
breach "the core and fields include an operator, a solver or a preconditioner" "$(
  grep -rnE '#include "(operators|solvers|preconditioners)/' src $code)"
breach "operators include a solver or a preconditioner" "$(
  grep -rnE '#include "(solvers|preconditioners)/' operators $code)"
breach "solvers include a preconditioner" "$(grep -rnE '#include "preconditioners/' solvers $code)"
breach "spectroscopy includes an operator, a solver or a preconditioner" "$(
  grep -rnE '#include "(operators|solvers|preconditioners)/' spectroscopy $code)"
# One include root: a quoted include names a file from the source tree's root or from include/.
missing=$(grep -rnoE '#include "[^"]+"' src operators solvers preconditioners spectroscopy petsc examples tests include $code |
  while IFS= read -r hit; do
    path=${hit#*\"}; path=${path%\"}
    [ -f "$path" ] || [ -f "include/$path" ] || echo "$hit"
  done)
breach "quoted includes that are not paths from the source root or include/" "$missing"
[ $status -eq 0 ] && echo "layers: arrows point down only; nothing below petsc/ includes PETSc's KSP/PC headers, latke/latke.h or petsc/; every include is a path from the source root or include/"
exit $status
