#!/usr/bin/env bash
# Runs on a GPU host with binaries built elsewhere (see scripts/device/pack.sh): the test
# binaries on the CUDA backend, the MPI tier on one GPU, and latke-bench at the lattice sizes
# of docs/performance.md. Results and logs go under $OUT (default ./gpu-out).
#   gpu-checks.sh [tests] [bench] [petsc] [schwarz] [multi] [multimass] [probe] [profile]
#   (default: tests bench petsc schwarz)
# LATKE_BENCH_OPS picks the operators the bench step times (default: wilson asqtad staggered;
# the staggered ones at LATKE_STAGGERED_LATTICES, default 32,32,32,64).
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
steps=${*:-tests bench petsc schwarz}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
status=0
if [[ $steps == *tests* ]]; then
  for t in test_wilson_reference test_core test_wilson test_staggered_reference test_staggered; do
    "$bin/$t" --gtest_brief=1 > "$out/$t.log" 2>&1; rc=$?; status=$((status | rc))
    echo "$t: exit $rc, $(grep -E 'PASSED|FAILED' "$out/$t.log" | tr '\n' ' ')"
  done
  for np in 1 2 4 4 4; do  # 4 ranks three times: races show as runs that differ
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_wilson_mpi" --gtest_brief=1 > "$out/mpi_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_wilson_mpi np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
  for np in 1 2 4 4 8; do
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_staggered_mpi" --gtest_brief=1 > "$out/staggered_mpi_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_staggered_mpi np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/staggered_mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  ops=${LATKE_BENCH_OPS:-wilson asqtad staggered}
  for op in $ops; do
    [ "$op" = wilson ] && continue
    # Staggered: asqtad fat and long links at 18 (and long at 12), naive links at 12 (and 18),
    # QUDA's published reference cases (docs/performance.md) first.
    recon=18,12; [ "$op" = staggered ] && recon=12,18
    for L in ${LATKE_STAGGERED_LATTICES:-32,32,32,64}; do
      tag=${op}_${L//,/x}
      "$bin/latke-bench" dslash -latke_op $op -latke_lattice $L -latke_precision double,single,half -latke_reconstruct $recon \
        -latke_json "$out/bench_$tag.json" -latke_tune_report > "$out/bench_$tag.log" 2>&1; status=$((status | $?))
      grep -vE '^(autotuned|.*block=)' "$out/bench_$tag.log"
    done
  done
  [[ " $ops " == *" wilson "* ]] && for L in ${LATKE_BENCH_LATTICES:-16,16,16,16 32,32,32,64 48,48,48,96}; do
    tag=${L//,/x}
    recon=18,12
    [ "$L" = 48,48,48,96 ] && recon=12   # the large lattice: the reconstruct QUDA's figures use
    "$bin/latke-bench" dslash -latke_lattice $L -latke_precision double,single,half -latke_reconstruct $recon \
      -latke_json "$out/bench_$tag.json" -latke_tune_report > "$out/bench_$tag.log" 2>&1; status=$((status | $?))
    grep -vE '^(autotuned|.*block=)' "$out/bench_$tag.log"
  done
fi
if [[ $steps == *petsc* ]]; then
  # The PETSc face on the CUDA backend with host PETSc vectors (staged through pinned buffers):
  # the test tier on 1 and 4 ranks, then latke-solve with -log_view as the benchmark.
  work=$(mktemp -d)
  for np in 1 4; do
    (cd "$work" && OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_petsc" --gtest_brief=1) > "$out/petsc_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_petsc np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/petsc_np$np.log" | head -2 | tr '\n' ' ')"
    (cd "$work" && OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_petsc_staggered" --gtest_brief=1) > "$out/petsc_staggered_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_petsc_staggered np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/petsc_staggered_np$np.log" | head -2 | tr '\n' ' ')"
  done
  for L in ${LATKE_SOLVE_LATTICES:-16,16,16,32 32,32,32,64}; do
    tag=asqtad_${L//,/x}
    "$bin/latke-solve" -latke_op asqtad -latke_lattice $L -latke_mass 0.05 -log_view -latke_json "$out/solve_$tag.json" > "$out/solve_$tag.log" 2>&1; rc=$?
    status=$((status | rc)); echo "== latke-solve $L asqtad cg: exit $rc"; grep -E "^latke-solve|^  (KSP|true|time)" "$out/solve_$tag.log"
    grep -E "^(MatMult |LatkeMatMult|LatkeDslash|LatkeStage|KSPSolve)" "$out/solve_$tag.log" | cut -c1-100
  done
  "$bin/embed_in_petsc" -latke_lattice 8,8,8,16 > "$out/embed.log" 2>&1; rc=$?; status=$((status | rc)); echo "embed_in_petsc: exit $rc, $(cat "$out/embed.log" | tail -1)"
  for L in ${LATKE_SOLVE_LATTICES:-16,16,16,32 32,32,32,64}; do
    tag=${L//,/x}
    for k in gcr fgmres; do
      "$bin/latke-solve" -latke_lattice $L -ksp_type $k -ksp_gmres_restart 20 -ksp_gcr_restart 20 -log_view \
        -latke_json "$out/solve_${k}_$tag.json" > "$out/solve_${k}_$tag.log" 2>&1; rc=$?; status=$((status | rc))
      echo "== latke-solve $L $k: exit $rc"; grep -E "^latke-solve|^  (KSP|true|time)" "$out/solve_${k}_$tag.log"
      grep -E "^(MatMult |LatkeMatMult|LatkeDslash|LatkeClover|LatkeStage|VecMAXPY|VecMDot|VecAXPY|VecNorm|VecDot|VecCopy|VecSet |VecAYPX|VecWAXPY|KSPSolve|KSPGMRESOrthog)" "$out/solve_${k}_$tag.log" | cut -c1-100
    done
  done
  rm -rf "$work"
fi
if [[ $steps == *schwarz* ]]; then
  # Native solvers and the Schwarz preconditioner: the test tier, then time to solution of
  # (a) native mixed-precision BiCGstab, (b) PETSc bcgs, (c) PETSc fgmres/gcr + latke_schwarz
  # over block sizes and MR steps, on LATKE_DD_LATTICE with the gauge options LATKE_DD_GAUGE.
  # LATKE_DD_NP ranks (one GPU each when there are as many).
  work=$(mktemp -d)
  for np in 1 4; do
    (cd "$work" && OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_solvers" --gtest_brief=1) > "$out/solvers_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_solvers np=$np (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/solvers_np$np.log" | head -2 | tr '\n' ' ')"
  done
  rm -rf "$work"
  np=${LATKE_DD_NP:-1}
  common="-latke_lattice ${LATKE_DD_LATTICE:-16,16,16,32} ${LATKE_DD_GAUGE:--latke_gauge_spread 0.1 -latke_mass -0.04} -latke_source z2"
  [ "$np" -gt 1 ] && common="$common -latke_grid ${LATKE_DD_GRID:-1,1,1,$np}"
  run_solve() {  # name, options...
    local name=$1; shift
    mpirun -np $np "$bin/latke-solve" $common "$@" -latke_json "$out/dd_${np}_$name.json" > "$out/dd_${np}_$name.log" 2>&1
    local rc=$?; status=$((status | rc))
    printf '%-28s exit %d | %s | %s | %s\n' "$name" $rc "$(grep -E '^  KSP' "$out/dd_${np}_$name.log" | sed 's/^ *//')" \
      "$(grep -E 'operator applications' "$out/dd_${np}_$name.log" | sed 's/^ *//')" "$(grep -E '^  time' "$out/dd_${np}_$name.log" | sed 's/^ *//')"
  }
  echo "== time to solution, $np rank(s): $common"
  run_solve native_bicgstab_single -latke_native -latke_solver bicgstab -latke_solver_sloppy single
  run_solve native_bicgstab_half -latke_native -latke_solver bicgstab -latke_solver_sloppy half
  run_solve petsc_bcgs -ksp_type bcgs
  for blk in ${LATKE_DD_BLOCKS:-8,8,8,8 4,4,4,4}; do
    for it in ${LATKE_DD_ITERS:-4 8}; do
      run_solve "native_gcr_sap_${blk//,/x}_$it" -latke_native -latke_solver gcr -latke_solver_pc schwarz \
        -pc_latke_schwarz_block $blk -pc_latke_schwarz_iterations $it
    done
  done
  for blk in ${LATKE_DD_BLOCKS:-8,8,8,8 4,4,4,4}; do
    for it in ${LATKE_DD_ITERS:-4 8}; do
      run_solve "fgmres_sap_${blk//,/x}_$it" -ksp_type fgmres -ksp_gmres_restart 20 -pc_type latke_schwarz \
        -pc_latke_schwarz_block $blk -pc_latke_schwarz_iterations $it
      run_solve "gcr_sap_${blk//,/x}_$it" -ksp_type gcr -ksp_gcr_restart 20 -pc_type latke_schwarz \
        -pc_latke_schwarz_block $blk -pc_latke_schwarz_iterations $it
    done
  done
  run_solve fgmres_msap -ksp_type fgmres -ksp_gmres_restart 20 -pc_type latke_schwarz \
    -pc_latke_schwarz_block 8,8,8,8 -pc_latke_schwarz_type multiplicative
fi
if [[ " $steps " == *" multimass "* ]]; then
  # Staggered solves at many masses: the multi-shift tests on the CUDA backend (the BLAS
  # update, both strategies in every sloppy precision; the MPI tier and the PETSc face on one
  # GPU), latke-solve -latke_masses with each strategy, then latke-bench multimass (8 masses
  # from 0.005 to 0.1, asqtad, a quenched beta 6.0 configuration cached in /tmp/latke-cache)
  # at LATKE_MULTIMASS_LATTICES in the sloppy precisions LATKE_MULTIMASS_SLOPPY.
  work=$(mktemp -d)
  mkdir -p /tmp/latke-cache
  "$bin/test_staggered_multishift" --gtest_brief=1 > "$out/multishift.log" 2>&1; rc=$?; status=$((status | rc))
  echo "test_staggered_multishift: exit $rc, $(grep -E 'PASSED|FAILED' "$out/multishift.log" | head -2 | tr '\n' ' ')"
  for np in 1 2 4; do
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_staggered_mpi" --gtest_brief=1 --gtest_filter='*MultiMass*' \
      > "$out/multimass_mpi_np$np.log" 2>&1; rc=$?; status=$((status | rc))
    echo "test_staggered_mpi MultiMass np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/multimass_mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
  for np in 1 4; do
    (cd "$work" && OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_petsc_staggered" --gtest_brief=1 --gtest_filter='*MultiMass*') \
      > "$out/multimass_petsc_np$np.log" 2>&1; rc=$?; status=$((status | rc))
    echo "test_petsc_staggered MultiMass np=$np (CUDA): exit $rc, $(grep -E 'PASSED|FAILED' "$out/multimass_petsc_np$np.log" | head -2 | tr '\n' ' ')"
  done
  rm -rf "$work"
  gauge="-latke_gauge quenched -latke_gauge_sweeps 300 -latke_gauge_cache /tmp/latke-cache"
  for strategy in multishift sequential; do
    "$bin/latke-solve" -latke_op asqtad -latke_lattice 16,16,16,32 $gauge -latke_source z2 \
      -latke_masses 0.005,0.01,0.02,0.05,0.1 -latke_multimass $strategy -latke_json "$out/solve_multimass_$strategy.json" \
      > "$out/solve_multimass_$strategy.log" 2>&1; rc=$?; status=$((status | rc))
    echo "== latke-solve 16x16x16x32 asqtad -latke_masses ($strategy): exit $rc"; sed -n '/multi-mass/,/time:/p' "$out/solve_multimass_$strategy.log"
  done
  for L in ${LATKE_MULTIMASS_LATTICES:-16,16,16,32 32,32,32,64}; do
    for sl in ${LATKE_MULTIMASS_SLOPPY:-single half}; do
      tag=${L//,/x}_$sl
      "$bin/latke-bench" multimass -latke_lattice $L $gauge -latke_solver_sloppy $sl -latke_json "$out/multimass_$tag.json" \
        > "$out/multimass_$tag.log" 2>&1; rc=$?; status=$((status | rc))
      echo "== latke-bench multimass $L sloppy $sl: exit $rc"; cat "$out/multimass_$tag.log"
    done
  done
fi
if [[ " $steps " == *" multi "* ]]; then
  # Two GPUs: one rank each; the lattice split in t (and in z and t), halos between devices.
  ngpu=$(nvidia-smi -L | wc -l)
  for np in 2 4 2 4; do  # one and two ranks per GPU; twice, since races show as runs that differ
    OMP_NUM_THREADS=4 mpirun -np $np "$bin/test_wilson_mpi" --gtest_brief=1 > "$out/mpi_${np}r_2gpu.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_wilson_mpi np=$np on $ngpu GPUs: exit $rc, $(grep -E 'PASSED|FAILED' "$out/mpi_${np}r_2gpu.log" | head -2 | tr '\n' ' ')"
    OMP_NUM_THREADS=4 mpirun -np $np "$bin/test_staggered_mpi" --gtest_brief=1 > "$out/staggered_mpi_${np}r_2gpu.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_staggered_mpi np=$np on $ngpu GPUs: exit $rc, $(grep -E 'PASSED|FAILED' "$out/staggered_mpi_${np}r_2gpu.log" | head -2 | tr '\n' ' ')"
  done
  mpirun -np 2 "$bin/latke-bench" dslash -latke_op asqtad -latke_lattice 32,32,32,64 -latke_grid 1,1,1,2 \
    -latke_precision double,single,half -latke_reconstruct 18 -latke_json "$out/bench2_asqtad.json" > "$out/bench2_asqtad.log" 2>&1
  status=$((status | $?)); cat "$out/bench2_asqtad.log"
  for L in 32,32,32,64 48,48,48,96; do
    tag=${L//,/x}
    mpirun -np 2 "$bin/latke-bench" dslash -latke_lattice $L -latke_grid 1,1,1,2 -latke_precision double,single,half \
      -latke_reconstruct 12 -latke_json "$out/bench2_$tag.json" > "$out/bench2_$tag.log" 2>&1; status=$((status | $?))
    cat "$out/bench2_$tag.log"
  done
fi
if [[ $steps == *probe* ]]; then
  LATKE_TUNE=0 ncu --section SpeedOfLight --section Occupancy --launch-count 40 "$bin/latke-bench" dslash \
    -latke_lattice 32,32,32,64 -latke_precision half -latke_form dslash -latke_iterations 1 > "$out/ncu_probe.txt" 2>&1
  grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers" "$out/ncu_probe.txt" | cut -c1-150 | tail -40
fi
if [[ $steps == *profile* ]]; then
  # The fused dslash (hopping + A^-1) on 32^3x64, each precision at reconstruct 12: skip
  # the autotuner's launches, profile two timed ones.
  for p in half single double; do
    ncu --kernel-name-base mangled --kernel-name regex:DslashKernel --launch-skip 42 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
      --section ComputeWorkloadAnalysis --section WarpStateStats "$bin/latke-bench" dslash -latke_lattice 32,32,32,64 \
      -latke_precision $p -latke_form dslash -latke_iterations 5 > "$out/ncu_$p.txt" 2>&1
    echo "== ncu $p"; grep -E "^ +(Duration|Memory Throughput|DRAM Throughput|L2 Hit Rate|L1/TEX Hit Rate|Registers Per Thread|Achieved Occupancy|Block Size|Compute \(SM\) Throughput|Issue Slots Busy|Theoretical Occupancy)" "$out/ncu_$p.txt" | head -14
  done
fi
exit $status
