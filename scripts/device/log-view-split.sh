#!/usr/bin/env bash
# Time per outer Krylov iteration from the output of a latke-solve run with -log_view (any
# PETSc version, any Latke; latke-solve of this tree prints the same split itself, from
# PETSc's event log around KSPSolve alone): the operator (MatMult), the preconditioner
# (PCApply) and PETSc's own work: the sum of its Vec events (the share printed), and the rest
# of KSPSolve beside it.
# The iteration count is read from latke-solve's "in N iterations" line, or given.
# Approximations: -log_view holds the whole run, so the MatMult after the solve (latke-solve's
# check with the full operator) is in MatMult too: the operator's time is scaled by the share
# of MatMult calls made in the solve (latke-solve's "operator applications: N"); with device
# vectors, use -log_view_gpu_time (without it PETSc prints nan for event times).
#
#   scripts/device/log-view-split.sh LOGFILE [ITERATIONS]
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
log=$1
its=${2:-$(sed -nE 's/.* in ([0-9]+) iterations.*/\1/p' "$log" | head -1)}
[ -n "$its" ] && [ "$its" -gt 0 ] || { echo "log-view-split: no iteration count in $log; give it as the second argument" >&2; exit 2; }
apps=$(sed -nE 's/^ *operator applications: ([0-9]+) double.*/\1/p' "$log" | head -1)
awk -v its="$its" -v apps="${apps:-0}" -v file="$log" '
  # Event lines: name, count (max), ratio, time (max), ...; summed over stages.
  $1 == "KSPSolve" { solve += $4 }
  $1 == "MatMult" { op += $4; mults += $2 }
  $1 == "LatkeMatMult" { latke += $4 }
  $1 == "PCApply" { pc += $4; pcs += $2 }
  $1 ~ /^Vec(Dot|DotNorm2|MDot|TDot|MTDot|Norm|Scale|Copy|Set|AXPY|AYPX|AXPBYCZ|WAXPY|MAXPY|AXPBY|Conjugate)$/ { vec += $4 }
  END {
    if (solve == 0) { print "log-view-split: no KSPSolve event in " file > "/dev/stderr"; exit 1 }
    if (apps > 0 && mults > apps) { op *= apps / mults; latke *= apps / mults; mults = apps }
    own = solve - op - pc
    printf "%s: %d iterations; per iteration: operator %.3f ms (MatMult, %d calls; LatkeMatMult %.3f ms), preconditioner %.3f ms (PCApply, %d calls), PETSc own work %.3f ms (Vec events; rest of KSPSolve %.3f ms): %.1f%% of the iteration\n",
      file, its, 1e3 * op / its, mults, 1e3 * latke / its, 1e3 * pc / its, pcs, 1e3 * vec / its, 1e3 * own / its, 100 * vec / solve
  }' "$log"
