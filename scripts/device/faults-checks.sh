#!/usr/bin/env bash
# Runs on a GPU host with binaries packed by scripts/device/pack.sh: the correctness tiers
# that the faults work touches, on the CUDA backend (the PETSc face, the solvers, the
# multigrid's null-space files, gauge I/O), then the faults tier itself with the GPU
# programs, then native solves on LATKE_FAULTS_LATTICE (default 32,32,32,64) checked with the
# double-precision operator (one of them on an operator stored in single). Logs go under $OUT (default
# ./gpu-out); a summary line per step on stdout.
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
status=0
work=$(mktemp -d)
for t in test_petsc test_solvers test_mg test_gauge test_gauge_io; do
  (cd "$work" && OMP_NUM_THREADS=2 "$bin/$t" --gtest_brief=1) > "$out/$t.log" 2>&1; rc=$?; status=$((status | rc))
  echo "$t (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/$t.log" | head -2 | tr '\n' ' ')"
done
for np in 1 2 4; do  # ranks sharing the one GPU: correctness only
  OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_mg_mpi" --gtest_brief=1 > "$out/mg_mpi_np$np.log" 2>&1; rc=$?
  status=$((status | rc)); echo "test_mg_mpi np=$np (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/mg_mpi_np$np.log" | head -2 | tr '\n' ' ')"
  OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_gauge_mpi" --gtest_brief=1 > "$out/gauge_mpi_np$np.log" 2>&1; rc=$?
  status=$((status | rc)); echo "test_gauge_mpi np=$np (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/gauge_mpi_np$np.log" | head -2 | tr '\n' ' ')"
done
(cd "$work" && OMP_NUM_THREADS=2 mpirun -np 2 "$bin/test_petsc" --gtest_brief=1) > "$out/petsc_np2.log" 2>&1; rc=$?
status=$((status | rc)); echo "test_petsc np=2 (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/petsc_np2.log" | head -2 | tr '\n' ' ')"
rm -rf "$work"

export LATKE_SOLVE=$bin/latke-solve LATKE_BENCH=$bin/latke-bench LATKE_GAUGE=$bin/latke-gauge
export LATKE_EMBED=$bin/embed_in_petsc LATKE_MPIEXEC=$(command -v mpirun) LATKE_FAULT_LIB=$bin/liblatke_fault_inject.so
for c in nonflexible_ksp true_residual_decides option_values memory json_full_disk solution_full_disk \
         gauge_full_disk outputs_checked_first killed_writer mg_file_damaged; do
  "$here/tests/faults/faults.sh" $c > "$out/faults_$c.log" 2>&1; rc=$?; status=$((status | rc))
  echo "faults $c (CUDA): exit $rc, $(tail -1 "$out/faults_$c.log")"
done

L=${LATKE_FAULTS_LATTICE:-32,32,32,64}
gauge="-latke_gauge quenched -latke_gauge_sweeps ${LATKE_FAULTS_SWEEPS:-100} -latke_gauge_cache /tmp/latke-cache"
mkdir -p /tmp/latke-cache
run_solve() {  # name, options...
  local name=$1; shift
  "$bin/latke-solve" -latke_lattice $L $gauge -latke_kappa 0.1351 -latke_csw 1.769 -latke_source z2 "$@" \
    -latke_json "$out/solve_$name.json" > "$out/solve_$name.log" 2>&1
  local rc=$?
  echo "== latke-solve $L $name: exit $rc"
  grep -E "^  (KSP|true residual|time|solved)|^latke-solve: (true residual|the solve)" "$out/solve_$name.log"
}
# Native solves (a host-only PETSc's KSP stages every vector: far slower at this size).
run_solve native_gcr_mg -latke_native -latke_solver gcr -latke_solver_pc mg -latke_solves 2
run_solve native_bicgstab_single_operator -latke_precision single -latke_native -latke_solver bicgstab \
  -latke_solver_tol 1e-6
exit $status
