#!/usr/bin/env bash
# Runs on a GPU host the GPU-resident PETSc path (docs/gpu-petsc.md) from binaries packed by
# scripts/device/pack-petsc-cuda.sh (.gpu-petsc/: Latke built with CUDA against PETSc built
# with CUDA by scripts/build-petsc-cuda.sh). Results and logs go under $OUT (default
# ./gpu-out). Steps (default: tests bench):
#   tests  every petsc-labelled test binary on 1 and 4 ranks (test_petsc_device on 1 and 2),
#          test_mg, and latke-solve / embed_in_petsc, all with -vec_type cuda
#   bench  32^3x64 even-odd Wilson-clover to 1e-10: gcr and fgmres(20), with -pc_type
#          latke_schwarz and none, device vectors; per outer iteration: operator, PC and
#          PETSc's own work, from the event log (-log_view -log_view_gpu_time)
#   light  the same lattice near the critical kappa (LATKE_LIGHT_KAPPA, 0.1345; c_sw 1.769, the
#          thermalized beta 6.0 configuration, Z2 source): gcr and fgmres with latke_mg, with
#          latke_schwarz at 16^4 blocks x 8 MR steps and at the default, and with none
#   dd     docs/solvers.md's PETSc bcgs and fgmres/gcr + latke_schwarz (LATKE_DD_SCHWARZ: lines
#          'name options') near the critical kappa on 1 GPU and on all GPUs (one rank each)
#   host326  the same solves with host vectors (-vec_type standard: PETSc 3.26's vector work on
#            the CPU, every vector staged over PCIe), bounded to LATKE_HOST_ITS iterations (20)
#   host318  the same with Debian's PETSc 3.18 (host only), from the bundle scripts/device/pack.sh
#            makes of a CUDA build against it (.gpu/); needs only .gpu/, not .gpu-petsc/
#   probe    only unpack and check that every library resolves and PETSc starts the GPU
# Environment: LATKE_BENCH_LATTICE (32,32,32,64), LATKE_BENCH_GAUGE (gauge options, default
# the quenched beta 6.0 configuration latke-solve generates), LATKE_BENCH_SCHWARZ (Schwarz
# options, default -pc_latke_schwarz_block 8,8,8,8 -pc_latke_schwarz_iterations 4),
# LATKE_HOST_ITS.
#
# PETSc built with CUDA aborts when it starts the GPU under an MPI that is not CUDA-aware
# unless given -use_gpu_aware_mpi 0; this script finds out which with a small run and sets
# PETSC_OPTIONS accordingly (written to $OUT/environment.txt).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$here/gpu-out}
gp=/tmp/latke-gpu-petsc
mkdir -p "$out" "$gp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
steps=" ${*:-tests bench} "
status=0
work=$(mktemp -d)
cache="-latke_gauge_cache $gp/gauge-cache"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv | tee "$out/device.txt"
L=${LATKE_BENCH_LATTICE:-32,32,32,64}
tag=${L//,/x}
gauge=${LATKE_BENCH_GAUGE:-}
schwarz=${LATKE_BENCH_SCHWARZ:--pc_latke_schwarz_block 8,8,8,8 -pc_latke_schwarz_iterations 4}
its=${LATKE_HOST_ITS:-20}
bench() {  # name binary [args]: one solve with the event log, and its split
  local name=$1 b=$2; shift 2
  "$b" -latke_lattice "$L" $cache $gauge -ksp_rtol 1e-10 -ksp_gmres_restart 20 -ksp_gcr_restart 20 -log_view "$@" \
    -latke_json "$out/bench_${name}_$tag.json" > "$out/bench_${name}_$tag.log" 2>&1
  local rc=$?
  echo "== $name ($tag): exit $rc"
  grep -E "^latke-solve|^  (KSP|true|time|per iteration|copies)" "$out/bench_${name}_$tag.log"
  grep -E "^(KSPSolve|MatMult |LatkeMatMult|LatkeDslash|LatkeStage|PCApply|VecMDot|VecMAXPY|VecNorm|VecCUDACopy)" "$out/bench_${name}_$tag.log" | cut -c1-190
  return $rc
}

if [[ $steps == *" host318 "* ]]; then
  # Debian's PETSc 3.18 (host only), CUDA backend: every vector staged over PCIe.
  if [ -f "$here/.gpu/rt.tar.xz" ] && [ -x "$here/.gpu/bin/latke-solve" ]; then
    echo "== host318: Debian's PETSc 3.18, $its iterations (scripts/device/pack.sh bundle in .gpu/)"
    mkdir -p /tmp/rt && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
    for k in gcr fgmres; do
      for pc in latke_schwarz none; do
        name=${k}_${pc#latke_}_host318
        extra=""; [ $pc = latke_schwarz ] && extra=$schwarz
        LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-} bench "$name" "$here/.gpu/bin/latke-solve" \
          -ksp_type $k -pc_type $pc $extra -ksp_max_it "$its"
        # A latke-solve that predates the split line: compute it from -log_view.
        grep -q "per iteration" "$out/bench_${name}_$tag.log" || "$here/scripts/device/log-view-split.sh" "$out/bench_${name}_$tag.log"
      done
    done
  else
    echo "host318: no .gpu/ bundle (scripts/device/pack.sh of a CUDA build against Debian's PETSc)" >&2; status=2
  fi
  steps=${steps/ host318 / }
  if [[ -z ${steps// /} ]]; then rm -rf "$work"; exit $status; fi
fi

for f in bin.tar.xz rt.tar.xz; do
  [ -f "$here/.gpu-petsc/$f" ] || { echo "no $here/.gpu-petsc/$f: pack with scripts/device/pack-petsc-cuda.sh" >&2; exit 2; }
  tar -C "$gp" -xJf "$here/.gpu-petsc/$f"
done
bin=$gp/bin
# The pack's one copy of the library serves embed_in_petsc (which links liblatke.so.0) too.
if [ -e "$gp/lib/liblatke_private.so.0" ] && [ ! -e "$gp/lib/liblatke.so.0" ]; then
  ln -s liblatke_private.so.0 "$gp/lib/liblatke.so.0"
fi
export LD_LIBRARY_PATH=$gp/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cp "$here/.gpu-petsc/MANIFEST" "$out/MANIFEST.txt" 2>/dev/null
missing=$(for b in "$bin"/* "$gp"/lib/*; do ldd "$b" | grep 'not found'; done | sort -u)
if [ -n "$missing" ]; then echo "unresolved libraries:"; echo "$missing"; exit 1; fi
ldd "$bin/latke-solve" | grep -E 'petsc|latke|cu|mpi' > "$out/ldd-latke-solve.txt"

# CUDA-aware MPI or not: PETSc's own check, on a tiny solve.
if ! "$bin/latke-solve" -latke_lattice 4,4,4,4 -vec_type cuda $cache > "$out/probe.log" 2>&1; then
  if grep -q "not GPU-aware" "$out/probe.log"; then
    export PETSC_OPTIONS="${PETSC_OPTIONS:-} -use_gpu_aware_mpi 0"
    "$bin/latke-solve" -latke_lattice 4,4,4,4 -vec_type cuda $cache > "$out/probe.log" 2>&1 || { cat "$out/probe.log"; exit 1; }
  else
    cat "$out/probe.log"; exit 1
  fi
fi
{ echo "PETSC_OPTIONS=${PETSC_OPTIONS:-}"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } | tee "$out/environment.txt"
grep -E "^latke-solve|KSP" "$out/probe.log"

run_test() {  # np binary [args]
  local np=$1 t=$2; shift 2
  (cd "$work" && OMP_NUM_THREADS=2 mpirun -np "$np" "$bin/$t" --gtest_brief=1 -vec_type cuda "$@") > "$out/${t}_np$np.log" 2>&1
  local rc=$?; status=$((status | rc))
  echo "$t np=$np: exit $rc, $(grep -E 'PASSED|FAILED|SKIPPED' "$out/${t}_np$np.log" | head -3 | tr '\n' ' ')"
}
if [[ $steps == *" tests "* ]]; then
  echo "== petsc-labelled tests, PETSc with CUDA, -vec_type cuda"
  run_test 1 test_petsc_device
  grep -A1 "SKIPPED \|Skipped" "$out/test_petsc_device_np1.log" | head -6
  run_test 2 test_petsc_device
  for np in 1 4; do
    run_test $np test_petsc
    run_test $np test_petsc_staggered
    run_test $np test_solvers
  done
  run_test 1 test_mg  # the multigrid PC (label mg) on device vectors too
  solve() {  # name np args
    local name=$1 np=$2; shift 2
    (cd "$work" && mpirun -np "$np" "$bin/latke-solve" -vec_type cuda $cache "$@") > "$out/solve_$name.log" 2>&1
    local rc=$?; status=$((status | rc))
    echo "latke-solve $name: exit $rc, $(grep -E '^  KSP' "$out/solve_$name.log" | sed 's/^ *//')"
  }
  solve default 1 -latke_lattice 4,4,4,8
  solve np4_fgmres 4 -latke_lattice 4,4,4,8 -latke_gauge random -ksp_type fgmres -latke_source z2
  solve asqtad 1 -latke_op asqtad -latke_lattice 4,4,4,8 -latke_u0 0.9
  solve asqtad_np4 4 -latke_op asqtad -latke_lattice 4,4,8,8 -latke_grid 1,1,2,2 -latke_source z2 -latke_precision single -ksp_rtol 1e-5
  solve staggered_full 1 -latke_op staggered -latke_form full -latke_lattice 4,4,4,4 -latke_mass 0.2
  solve multimass 1 -latke_op asqtad -latke_lattice 4,4,4,8 -latke_masses 0.05,0.1,0.2
  solve multimass_np4 4 -latke_op asqtad -latke_lattice 4,4,8,8 -latke_grid 1,1,2,2 -latke_masses 0.05,0.1,0.2 -latke_multimass sequential -latke_source z2
  "$bin/embed_in_petsc" -latke_lattice 8,8,8,16 -vec_type cuda > "$out/embed.log" 2>&1; rc=$?; status=$((status | rc))
  echo "embed_in_petsc: exit $rc, $(tail -1 "$out/embed.log")"
fi

if [[ $steps == *" bench "* ]]; then
  echo "== benchmark: $L even-odd Wilson-clover, rtol 1e-10, device vectors (PETSc 3.26 + CUDA)"
  for k in gcr fgmres; do
    bench "${k}_schwarz_cuda" "$bin/latke-solve" -ksp_type $k -vec_type cuda -log_view_gpu_time -pc_type latke_schwarz $schwarz
    status=$((status | $?))
    bench "${k}_none_cuda" "$bin/latke-solve" -ksp_type $k -vec_type cuda -log_view_gpu_time -pc_type none
    status=$((status | $?))
  done
  # The same without -log_view_gpu_time: -log_view then prints nan for the times of events
  # whose GPU work is asynchronous; latke-solve's split still comes from the event log.
  bench gcr_schwarz_cuda_nogputime "$bin/latke-solve" -ksp_type gcr -vec_type cuda -pc_type latke_schwarz $schwarz
fi
if [[ $steps == *" dd "* ]]; then
  # The Schwarz comparison of docs/solvers.md on 1 GPU and on every GPU of the host (one rank
  # each, the lattice split in t), near the critical kappa, device vectors: PETSc bcgs and PETSc
  # fgmres and gcr + latke_schwarz at the block sizes, MR steps, types and cycles of
  # LATKE_DD_SCHWARZ (the native solvers are timed by dd-scaling.sh on the same problem).
  kl=${LATKE_LIGHT_KAPPA:-0.1345}
  light="-latke_gauge quenched -latke_gauge_sweeps 300 -latke_csw 1.769 -latke_kappa $kl -latke_source z2"
  ngpu=$(nvidia-smi -L | wc -l)
  for np in $(echo 1 $ngpu | tr ' ' '\n' | sort -un); do
    grid=""; [ "$np" -gt 1 ] && grid="-latke_grid 1,1,1,$np"
    echo "== dd: $L, kappa $kl, $np GPU(s), device vectors"
    while read -r name opts; do
      [ -z "$name" ] && continue
      (cd "$work" && OMP_NUM_THREADS=4 mpirun -np $np "$bin/latke-solve" -latke_lattice "$L" $cache $light $grid -vec_type cuda \
        -ksp_rtol 1e-10 -ksp_gmres_restart 20 -ksp_gcr_restart 20 $opts -latke_json "$out/dd_np${np}_$name.json") \
        < /dev/null > "$out/dd_np${np}_$name.log" 2>&1; rc=$?; status=$((status | rc))
      printf 'np=%d %-26s exit %d | %s | %s | %s\n' $np "$name" $rc "$(grep -E '^  KSP' "$out/dd_np${np}_$name.log" | sed 's/^ *KSP //')" \
        "$(grep -E 'operator applications' "$out/dd_np${np}_$name.log" | sed 's/^ *//')" "$(grep -E '^  time' "$out/dd_np${np}_$name.log" | sed 's/^ *time: //')"
    done <<< "${LATKE_DD_SCHWARZ:-bcgs -ksp_type bcgs
fgmres_16_8 -ksp_type fgmres -pc_type latke_schwarz -pc_latke_schwarz_block 16,16,16,16 -pc_latke_schwarz_iterations 8
fgmres_16_4x2 -ksp_type fgmres -pc_type latke_schwarz -pc_latke_schwarz_block 16,16,16,16 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_cycles 2
fgmres_sap16_4x4 -ksp_type fgmres -pc_type latke_schwarz -pc_latke_schwarz_block 16,16,16,16 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 4
gcr_sap16_4x4 -ksp_type gcr -pc_type latke_schwarz -pc_latke_schwarz_block 16,16,16,16 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 4}"
  done
fi
if [[ $steps == *" light "* ]]; then
  kl=${LATKE_LIGHT_KAPPA:-0.1345}
  light="-latke_gauge quenched -latke_gauge_sweeps 300 -latke_csw 1.769 -latke_kappa $kl -latke_source z2"
  echo "== light: $L, kappa $kl, c_sw 1.769, device vectors"
  for k in gcr fgmres; do
    bench "${k}_mg_light" "$bin/latke-solve" -ksp_type $k -vec_type cuda $light -pc_type latke_mg
    bench "${k}_schwarz16x8_light" "$bin/latke-solve" -ksp_type $k -vec_type cuda $light -pc_type latke_schwarz \
      -pc_latke_schwarz_block 16,16,16,16 -pc_latke_schwarz_iterations 8
    bench "${k}_schwarz_light" "$bin/latke-solve" -ksp_type $k -vec_type cuda $light -pc_type latke_schwarz $schwarz
    bench "${k}_none_light" "$bin/latke-solve" -ksp_type $k -vec_type cuda $light -pc_type none -ksp_max_it 4000
  done
fi
if [[ $steps == *" host326 "* ]]; then
  echo "== host326: host vectors (-vec_type standard) with PETSc 3.26, staged over PCIe at every operator and PC application, $its iterations"
  for k in gcr fgmres; do
    bench "${k}_schwarz_host326" "$bin/latke-solve" -ksp_type $k -vec_type standard -pc_type latke_schwarz $schwarz -ksp_max_it "$its"
    bench "${k}_none_host326" "$bin/latke-solve" -ksp_type $k -vec_type standard -pc_type none -ksp_max_it "$its"
  done
fi
rm -rf "$work"
exit $status
