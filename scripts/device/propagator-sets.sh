#!/usr/bin/env bash
# The propagator throughput benchmark of issue 43, on one GPU: the 12 point-source columns of
# 32^3x64 at kappa 0.1351 (quenched beta 6.0, c_sw 1.769, 100 sweeps) solved by native GCR +
# multigrid one column at a time (-latke_solver_set_size 1) and as one set of 12 (the default),
# each twice with a shared tune cache (the second run is the figure), the two records' correlators
# compared; one column at a time also with the multigrid's general defaults (latke-solve's:
# 100 setup steps, 4 coarse smoothing steps; "set1g") instead of latke-propagator's; and one
# column by mixed-precision BiCGstab for the setup-plus-12-columns ratio.
# Then the set tests of test_mg and test_solvers on the device. Logs and records under $out.
# Usage: propagator-sets.sh [lattice] [kappa]   (LATKE_PROP_PASSES: runs of each, 2; with a
# tune cache warmed by earlier runs 1 is enough)
source "$(dirname "$0")/host-env.sh"
lattice=${1:-32,32,32,64}
kappa=${2:-0.1351}
export LATKE_RESOURCE_PATH=/tmp/latke-resources
mkdir -p "$LATKE_RESOURCE_PATH"
common=(-latke_lattice "$lattice" -latke_csw 1.769 -latke_kappas "$kappa" -latke_gauge_sweeps 100 -latke_configs 1)
status=0
general=(-pc_latke_mg_setup_iterations 100 -pc_latke_mg_coarse_post_smooth 4)
passes=${LATKE_PROP_PASSES:-2}
for ((pass = 1; pass <= passes; ++pass)); do
  for set in 1 1g 12; do
    extra=()
    [ $set = 1g ] && extra=("${general[@]}")
    timeout -k 5 300 "$bin/latke-propagator" "${common[@]}" -latke_solver_set_size ${set%g} "${extra[@]}" \
      -latke_json "$out/prop_set${set}_$pass.json" > "$out/prop_set${set}_$pass.log" 2>&1; status=$((status | $?))
    echo "== set size $set, pass $pass"; grep -E "config|error|ERROR" "$out/prop_set${set}_$pass.log" | head -5
  done
done
python3 "$here/tests/spectrum/compare_records.py" "$out/prop_set1_$passes.json" "$out/prop_set12_$passes.json"; status=$((status | $?))
# One column by mixed BiCGstab (single inner), as the issue's baseline.
timeout -k 5 300 "$bin/latke-solve" -latke_lattice "$lattice" -latke_csw 1.769 -latke_kappa "$kappa" \
  -latke_gauge_sweeps 100 -latke_native -latke_solver bicgstab -latke_source point > "$out/bicgstab.log" 2>&1
status=$((status | $?))
grep -iE "iterations|seconds|converged" "$out/bicgstab.log" | head -5
"$bin/test_mg" --gtest_filter='*TransferOfASet*:*SetCycle*:*GcrSet*:*ParityCycle*' > "$out/test_mg_sets.log" 2>&1
status=$((status | $?)); tail -3 "$out/test_mg_sets.log"
"$bin/test_solvers" --gtest_filter='*ManyRightHandSides*:*MultigridIsKept*' > "$out/test_solvers_sets.log" 2>&1
status=$((status | $?)); tail -3 "$out/test_solvers_sets.log"
exit $status
