#!/usr/bin/env bash
# Runs on a GPU host with binaries built elsewhere (scripts/device/pack.sh): the quenched
# generator's validation. For beta = 5.7, 6.0, 6.2 on 16^4 it generates a chain from a hot
# start (1 heat-bath + 4 over-relaxation passes per sweep, the plaquette measured every
# sweep), then prints the mean plaquette with its autocorrelation-aware error against a
# published value, and the generator's throughput. Also the test binaries of the gauge
# label on the CUDA backend, and the throughput at 32^4. Results and logs go under $OUT.
#   gauge-validation.sh [SWEEPS] [THERM]      (default 4000 500: about a minute per beta
#                                              at 1e9 link updates/s; measure it first with
#                                              LATKE_GAUGE_STEPS=bench)
# Environment: LATKE_GAUGE_STEPS (any of tests bench ensembles), LATKE_GAUGE_LATTICE
# (16,16,16,16), LATKE_GAUGE_BACKEND (cuda), LATKE_GAUGE_KEEP=1 to keep the last
# configuration of each chain as ILDG files (38 MB each at 16^4).
# Reference plaquettes (<Re tr U_P>/3, Wilson action):
#   beta 6.0: 0.593678(24) on 16^4, Boyd et al., Nucl. Phys. B469 (1996) 419, hep-lat/9602007
#   beta 5.7: 0.54905 and beta 6.2: 0.61363, large-volume values as commonly quoted (quoted
#             here without a checked source or error: compare with the literature before
#             drawing conclusions from a deviation below 1e-4)
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${LATKE_GPU_BIN:-$here/.gpu/bin}
out=${OUT:-$here/gpu-out}
sweeps=${1:-4000}
therm=${2:-500}
steps=${LATKE_GAUGE_STEPS:-tests bench ensembles}
lattice=${LATKE_GAUGE_LATTICE:-16,16,16,16}
backend=${LATKE_GAUGE_BACKEND:-cuda}
mkdir -p "$out" /tmp/rt
[ -f "$here/.gpu/rt.tar.xz" ] && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
export LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt" || true
status=0
if [[ $steps == *tests* ]]; then
  for t in test_gauge test_gauge_io; do
    "$bin/$t" --gtest_brief=1 > "$out/$t.log" 2>&1; rc=$?; status=$((status | rc))
    echo "$t: exit $rc, $(grep -E 'PASSED|FAILED|SKIPPED' "$out/$t.log" | tr '\n' ' ')"
  done
  for np in 1 2 4; do
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_gauge_mpi" --gtest_brief=1 > "$out/gauge_mpi_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_gauge_mpi np=$np (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/gauge_mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  for L in 16,16,16,16 32,32,32,32; do
    "$bin/latke-gauge" generate -latke_backend "$backend" -latke_lattice $L -latke_beta 6.0 -latke_sweeps 100 \
      -latke_measure_every 0 > "$out/gauge_bench_${L//,/x}.log" 2>&1; status=$((status | $?))
    echo "$L: $(grep -E '^generator:' "$out/gauge_bench_${L//,/x}.log")"
  done
fi
if [[ $steps == *ensembles* ]]; then
  for case in "5.7 0.54905 0" "6.0 0.593678 0.000024" "6.2 0.61363 0"; do
    set -- $case
    beta=$1; ref=$2; ref_err=$3
    keep=()
    [ "${LATKE_GAUGE_KEEP:-0}" = 1 ] && keep=(-latke_output "$out/quenched_${lattice//,/x}_b$beta.lime")
    "$bin/latke-gauge" generate -latke_backend "$backend" -latke_lattice "$lattice" -latke_beta "$beta" \
      -latke_sweeps "$sweeps" -latke_measure_every 1 -latke_seed 1 -latke_start hot \
      -latke_history "$out/plaquette_b$beta.txt" "${keep[@]}" > "$out/generate_b$beta.log" 2>&1; status=$((status | $?))
    echo "== beta $beta: $(grep -E '^generator:' "$out/generate_b$beta.log")"
    "$bin/latke-gauge" analyze "$out/plaquette_b$beta.txt" -latke_therm "$therm" -latke_expect "$ref" \
      -latke_expect_error "$ref_err" | tee "$out/analyze_b$beta.txt"; status=$((status | $?))
  done
fi
exit $status
