#!/usr/bin/env bash
# Runs on a GPU host with binaries built elsewhere (see scripts/device/pack.sh): the test
# binaries on the CUDA backend, the MPI tier on one GPU, and latke-bench at the issue's
# lattice sizes. Results and logs go under $OUT (default ./gpu-out).
#   gpu-checks.sh [tests] [bench] [profile]    (default: tests bench)
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${LATKE_GPU_BIN:-$here/.gpu/bin}
out=${OUT:-$here/gpu-out}
mkdir -p "$out" /tmp/rt
[ -f "$here/.gpu/rt.tar.xz" ] && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
export LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
steps=${*:-tests bench}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
status=0
if [[ $steps == *tests* ]]; then
  for t in test_wilson_reference test_core test_wilson; do
    "$bin/$t" --gtest_brief=1 > "$out/$t.log" 2>&1; rc=$?; status=$((status | rc))
    echo "$t: exit $rc, $(grep -E 'PASSED|FAILED' "$out/$t.log" | tr '\n' ' ')"
  done
  for np in 1 2 4 4 4; do  # 4 ranks three times: races show as runs that differ
    OMP_NUM_THREADS=2 mpirun -np $np "$bin/test_wilson_mpi" --gtest_brief=1 > "$out/mpi_np$np.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_wilson_mpi np=$np (CUDA, one GPU): exit $rc, $(grep -E 'PASSED|FAILED' "$out/mpi_np$np.log" | head -2 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  for L in ${LATKE_BENCH_LATTICES:-16,16,16,16 32,32,32,64 48,48,48,96}; do
    tag=${L//,/x}
    recon=18,12
    [ "$L" = 48,48,48,96 ] && recon=12   # the large lattice: the reconstruct QUDA's figures use
    "$bin/latke-bench" dslash -latke_lattice $L -latke_precision double,single,half -latke_reconstruct $recon \
      -latke_json "$out/bench_$tag.json" -latke_tune_report > "$out/bench_$tag.log" 2>&1; status=$((status | $?))
    grep -vE '^(autotuned|.*block=)' "$out/bench_$tag.log"
  done
fi
if [[ $steps == *multi* ]]; then
  # Two GPUs: one rank each; the lattice split in t (and in z and t), halos between devices.
  ngpu=$(nvidia-smi -L | wc -l)
  for np in 2 4 2 4; do  # one and two ranks per GPU; twice, since races show as runs that differ
    OMP_NUM_THREADS=4 mpirun -np $np "$bin/test_wilson_mpi" --gtest_brief=1 > "$out/mpi_${np}r_2gpu.log" 2>&1; rc=$?
    status=$((status | rc)); echo "test_wilson_mpi np=$np on $ngpu GPUs: exit $rc, $(grep -E 'PASSED|FAILED' "$out/mpi_${np}r_2gpu.log" | head -2 | tr '\n' ' ')"
  done
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
