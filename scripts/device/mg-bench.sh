#!/usr/bin/env bash
# Runs on a GPU host (binaries from scripts/device/pack.sh): the multigrid tests on the CUDA
# backend, then time to solution of native GCR + latke_mg against the native mixed-precision
# BiCGstab on a thermalized quenched configuration at several kappa (docs/multigrid.md's table).
# Results and logs under $OUT. Environment: LATKE_MG_LATTICE (32,32,32,64), LATKE_MG_KAPPAS
# ("0.1340 0.1345 0.1349"), LATKE_MG_OPTIONS (extra multigrid options), LATKE_MG_VARIANTS
# (lines "name options..." of further multigrid runs), LATKE_MG_STEPS ("tests bench"; add
# "kernels" for latke-bench mg with the coarse operators in single and in half),
# LATKE_MG_BICGSTAB (1; 0 skips the BiCGstab runs).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${LATKE_GPU_BIN:-$here/.gpu/bin}
out=${OUT:-$here/gpu-out}
mkdir -p "$out" /tmp/rt /tmp/latke-cache
[ -f "$here/.gpu/rt.tar.xz" ] && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
export LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
steps=${LATKE_MG_STEPS:-tests bench}
status=0
if [[ $steps == *kernels* ]]; then
  for p in single half; do
    "$bin/latke-bench" mg -latke_backend cuda -latke_lattice "${LATKE_MG_LATTICE:-32,32,32,64}" \
      -pc_latke_mg_setup_iterations 10 -pc_latke_mg_precision $p > "$out/bench_mg_$p.log" 2>&1; rc=$?
    status=$((status | rc)); echo "latke-bench mg, coarse operators in $p: exit $rc"
    grep -E "copy|coarse|restrict|prolong|setup" "$out/bench_mg_$p.log"
  done
fi
if [[ $steps == *tests* ]]; then
  "$bin/test_mg" --gtest_brief=1 > "$out/test_mg.log" 2>&1; rc=$?; status=$((status | rc))
  echo "test_mg (CPU and CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/test_mg.log" | tr '\n' ' ')"
  for np in 1 2 4; do
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_mg_mpi" --gtest_brief=1 > "$out/mg_mpi_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_mg_mpi np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/mg_mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  L=${LATKE_MG_LATTICE:-32,32,32,64}
  gauge="-latke_gauge quenched -latke_gauge_sweeps 300 -latke_gauge_cache /tmp/latke-cache -latke_csw 1.769"
  for k in ${LATKE_MG_KAPPAS:-0.1340 0.1345 0.1349}; do
    common="-latke_lattice $L $gauge -latke_kappa $k -latke_source z2"
    run() {  # name, options...
      local name=$1; shift
      OMP_NUM_THREADS=8 "$bin/latke-solve" $common "$@" -latke_json "$out/mg_${k}_$name.json" < /dev/null > "$out/mg_${k}_$name.log" 2>&1
      local rc=$?; status=$((status | rc))
      printf 'kappa %s %-14s exit %d | %s | %s | %s\n' "$k" "$name" $rc "$(grep -E '^  KSP' "$out/mg_${k}_$name.log" | sed 's/^ *KSP //')" \
        "$(grep -E 'operator applications' "$out/mg_${k}_$name.log" | sed 's/^ *//')" "$(grep -E '^  time' "$out/mg_${k}_$name.log" | sed 's/^ *time: //')"
    }
    [[ ${LATKE_MG_BICGSTAB:-1} == 1 ]] && run bicgstab -latke_native -latke_solver bicgstab -latke_solver_sloppy single
    run mg_gcr -latke_native -latke_solver gcr -latke_solver_pc mg -pc_latke_mg_monitor -pc_latke_mg_verify ${LATKE_MG_OPTIONS:-}
    grep -E "Latke MG: level .: coarse|verify" "$out/mg_${k}_mg_gcr.log"
    while read -r name opts; do  # variants, named after what they change
      [ -z "$name" ] && continue
      run "$name" -latke_native -latke_solver gcr -latke_solver_pc mg $opts ${LATKE_MG_OPTIONS:-}
    done <<< "${LATKE_MG_VARIANTS:-}"
  done
fi
exit $status
