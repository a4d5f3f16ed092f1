#!/usr/bin/env bash
# Runs on a GPU host (binaries from scripts/device/pack.sh): the spectroscopy tier on the CUDA
# backend (test_spectroscopy on 1 and 2 ranks of one GPU: contractions, gauge fixing, link and quark
# smearing), latke-bench smear, contract and gaugefix on LATKE_SPECTRO_BENCH_LATTICE (32,32,32,64),
# and the complete spectroscopy
# run of docs/latke-propagator.md with smeared sources and sinks: 16^3x32, beta 6.0, c_sw 1.769,
# LATKE_SPECTRO_CONFIGS (20) configurations 50 sweeps apart after 500, kappa 0.1330 ... 0.1345,
# Wuppertal smearing (LATKE_SPECTRO_SMEAR, default "-latke_smear wuppertal -latke_smear_steps 20
# -latke_smear_alpha 3") on APE links, with the nucleon and the momenta n^2 <= 3
# (LATKE_SPECTRO_MOM2). Its record goes to $out/smeared.json for latke-spectrum (--sink point and
# --sink smeared). "wall" runs the same chain with Coulomb-gauge-fixed wall sources into
# $out/wall.json (--sink wall). "fix" generates a thermalised LATKE_SPECTRO_FIX_LATTICE
# (32,32,32,64) configuration at beta 6.0 and Coulomb-fixes it by each method (iterations and
# seconds to theta < 1e-12). Usage: spectroscopy.sh [tests] [bench] [run] [wall] [fix] (default the
# first three).
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
steps=${*:-tests bench run}
export LATKE_RESOURCE_PATH=/tmp/latke-resources
mkdir -p "$LATKE_RESOURCE_PATH"
status=0
if [[ $steps == *tests* ]]; then
  for np in 1 2; do
    OMP_NUM_THREADS=2 timeout -k 5 300 mpirun -np $np "$bin/test_spectroscopy" --gtest_brief=1 \
      > "$out/spectroscopy_np$np.log" 2>&1; rc=$?; status=$((status | rc))
    echo "test_spectroscopy np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/spectroscopy_np$np.log" | head -3 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  for b in smear contract gaugefix; do
    timeout -k 5 200 "$bin/latke-bench" $b -latke_lattice "${LATKE_SPECTRO_BENCH_LATTICE:-32,32,32,64}" \
      > "$out/bench_$b.log" 2>&1; status=$((status | $?))
    cat "$out/bench_$b.log"
  done
fi
if [[ $steps == *run* ]]; then
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout -k 5 480 "$bin/latke-propagator" -latke_lattice 16,16,16,32 -latke_csw 1.769 \
    -latke_kappas 0.1330,0.1335,0.1340,0.1345 -latke_gauge_sweeps 500 -latke_configs "${LATKE_SPECTRO_CONFIGS:-20}" \
    -latke_config_sweeps 50 ${LATKE_SPECTRO_SMEAR:--latke_smear wuppertal -latke_smear_steps 20 -latke_smear_alpha 3} \
    -latke_mom2_max "${LATKE_SPECTRO_MOM2:-3}" -latke_json "$out/smeared.json" > "$out/propagator.log" 2>&1
  rc=$?; status=$((status | rc))
  echo "latke-propagator (smeared): exit $rc, $(( $(date +%s) - start )) s from start to end"
  grep -E "config (0|19) |error|ERROR|written" "$out/propagator.log" | head -12
fi
if [[ $steps == *wall* ]]; then
  start=$(date +%s)
  timeout -k 5 480 "$bin/latke-propagator" -latke_lattice 16,16,16,32 -latke_csw 1.769 \
    -latke_kappas 0.1330,0.1335,0.1340,0.1345 -latke_gauge_sweeps 500 -latke_configs "${LATKE_SPECTRO_CONFIGS:-20}" \
    -latke_config_sweeps 50 -latke_source wall -latke_json "$out/wall.json" > "$out/wall.log" 2>&1
  rc=$?; status=$((status | rc))
  echo "latke-propagator (Coulomb wall): exit $rc, $(( $(date +%s) - start )) s from start to end"
  grep -E "config (0|19)|error|ERROR|written" "$out/wall.log" | head -12
fi
if [[ $steps == *fix* ]]; then
  lat=${LATKE_SPECTRO_FIX_LATTICE:-32,32,32,64}
  timeout -k 5 300 "$bin/latke-gauge" generate -latke_lattice "$lat" -latke_sweeps 200 -latke_measure_every 0 \
    -latke_output /tmp/fix_in.nersc > "$out/fix_generate.log" 2>&1; status=$((status | $?))
  for m in fourier overrelax; do
    timeout -k 5 300 "$bin/latke-gauge" fix /tmp/fix_in.nersc /tmp/fix_out.nersc -latke_gauge_fix_method $m \
      -latke_gauge_fix_max_iter 50000 -latke_json "$out/fix_$m.json" > "$out/fix_$m.log" 2>&1
    rc=$?; status=$((status | rc))
    echo "latke-gauge fix ($m, $lat): exit $rc, $(grep -E 'gauge \(' "$out/fix_$m.log")"
  done
fi
exit $status
