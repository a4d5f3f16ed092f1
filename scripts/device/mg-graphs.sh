#!/usr/bin/env bash
# The multigrid's coarse corrections launched as CUDA graphs (-pc_latke_mg_graphs 1, the
# default) against kernel by kernel (0), on one GPU: native GCR + latke_mg on a quenched
# configuration (beta 6.0, c_sw 1.769, 100 sweeps, Z2 source), three solves per run of which
# the later two are timed, the two settings alternated; a first pass warms the tune cache and
# the configuration. Then -ksp_view's count of graph launches (PETSc's FGMRES + latke_mg). The graph tests run first.
# Usage: mg-graphs.sh [kappa] [passes] [lattice...]   (0.1351, 3, 32,32,32,64)
source "$(dirname "$0")/host-env.sh"
kappa=${1:-0.1351}
passes=${2:-3}
shift 2 2> /dev/null
lattices=("$@")
[ ${#lattices[@]} -eq 0 ] && lattices=(32,32,32,64)
export LATKE_RESOURCE_PATH=/tmp/latke-resources
mkdir -p "$LATKE_RESOURCE_PATH" /tmp/latke-cache
status=0
"$bin/test_core" --gtest_filter='*Graph*' > "$out/test_core_graph.log" 2>&1; rc=$?; status=$((status | rc))
echo "test_core graphs: exit $rc, $(grep -E 'PASSED|FAILED' "$out/test_core_graph.log" | tr '\n' ' ')"
"$bin/test_mg" --gtest_filter='*Graph*:*Cycle*:*DirectCoarsest*:*Update*' > "$out/test_mg_graph.log" 2>&1; rc=$?
status=$((status | rc)); echo "test_mg graphs and cycles: exit $rc, $(grep -E 'PASSED|FAILED' "$out/test_mg_graph.log" | tr '\n' ' ')"
summary() {  # json: iterations, first solve, repeated solves, setup
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("its %s solve %.4f repeat %s setup %.2f" % (j["iterations"], j["solve_seconds"], " ".join("%.4f" % t for t in j.get("repeat_solve_seconds", [])), j["setup_seconds"]))' "$1"
}
for L in "${lattices[@]}"; do
  common=(-latke_lattice "$L" -latke_gauge quenched -latke_gauge_sweeps 100 -latke_gauge_cache /tmp/latke-cache
    -latke_csw 1.769 -latke_kappa "$kappa" -latke_source z2 -latke_native -latke_solver gcr -latke_solver_pc mg
    -latke_solves 3)
  for ((pass = 0; pass <= passes; ++pass)); do
    for g in 1 0; do
      name=${L//,/x}_graphs${g}_$pass
      OMP_NUM_THREADS=8 timeout -k 5 240 "$bin/latke-solve" "${common[@]}" -pc_latke_mg_graphs $g \
        -latke_json "$out/$name.json" < /dev/null > "$out/$name.log" 2>&1; rc=$?; status=$((status | rc))
      echo "$L graphs $g pass $pass: exit $rc $(summary "$out/$name.json" 2> /dev/null)"
    done
  done
  # PETSc's FGMRES + latke_mg (latke-solve's default), for -ksp_view.
  OMP_NUM_THREADS=8 timeout -k 5 240 "$bin/latke-solve" "${common[@]:0:14}" -ksp_view \
    > "$out/${L//,/x}_view.log" 2>&1; status=$((status | $?))
  grep -E "CUDA graph|level [0-9]:" "$out/${L//,/x}_view.log" | head -8
done
exit $status
