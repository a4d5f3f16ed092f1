#!/usr/bin/env bash
# Runs on a host with several GPUs, one MPI rank per GPU (each rank on its own device):
#   multi-gpu.sh [tests] [bench] [gauge]      (default: all three)
# tests: the MPI tiers (test_wilson_mpi, test_staggered_mpi, test_gauge_mpi, test_mg_mpi) on
#        2 and 4 GPUs: peer to peer signalled on the device (p2p=1), peer to peer signalled by
#        the host (p2p=host: LATKE_HALO_SIGNAL=host), and staged MPI (p2p=0: LATKE_P2P=0).
# bench: latke-bench dslash, Wilson-clover 32^3x64 reconstruct 12, on 1, 2 (t split) and 4
#        GPUs (t, and z-t split), for each policy of LATKE_MULTI_POLICIES (exterior pass:halo
#        stream priority:signals, LATKE_DSLASH_EXTERIOR, LATKE_COMM_PRIORITY and
#        LATKE_HALO_SIGNAL; default auto:1:host whole:1:host partial:1:host whole:0:host whole:1:device):
#        time per application and its split (interior, faces packed, ghosts in, exterior).
# gauge: latke-gauge generate 32^3x64 at beta 6.0 on 1 and 4 GPUs (t and z-t), peer to peer
#        and staged: link updates/s, and the plaquette, which must be the same on every grid.
# Logs and JSON under $OUT; summaries on stdout. LATKE_MULTI_LATTICE overrides 32,32,32,64.
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/device.txt"
ngpu=$(nvidia-smi -L | wc -l)
steps=${*:-tests bench gauge}
L=${LATKE_MULTI_LATTICE:-32,32,32,64}
status=0
run_np() { local np=$1; shift; OMP_NUM_THREADS=4 timeout "${LATKE_MULTI_TIMEOUT:-240}" mpirun -np "$np" --bind-to none "$@"; }
if [[ $steps == *tests* ]]; then
  for np in 2 4; do
    [ "$np" -le "$ngpu" ] || continue
    for p2p in 1 0 host; do
      for t in test_wilson_mpi test_staggered_mpi test_gauge_mpi test_mg_mpi; do
        sig=device; [ "$p2p" = host ] && sig=host
        LATKE_HALO_SIGNAL=$sig LATKE_P2P=${p2p/host/1} run_np $np "$bin/$t" --gtest_brief=1 > "$out/${t}_np${np}_p2p$p2p.log" 2>&1; rc=$?
        status=$((status | rc))
        echo "$t np=$np p2p=$p2p ($np GPUs): exit $rc, $(grep -E 'PASSED|FAILED' "$out/${t}_np${np}_p2p$p2p.log" | head -2 | tr '\n' ' ')"
      done
    done
    LATKE_DSLASH_EXTERIOR=whole run_np $np "$bin/test_wilson_mpi" --gtest_brief=1 > "$out/wilson_whole_np$np.log" 2>&1
    rc=$?; status=$((status | rc))
    echo "test_wilson_mpi np=$np exterior whole ($np GPUs): exit $rc, $(grep -E 'PASSED|FAILED' "$out/wilson_whole_np$np.log" | head -2 | tr '\n' ' ')"
  done
fi
if [[ $steps == *bench* ]]; then
  for c in 1:1,1,1,1 2:1,1,1,2 4:1,1,1,4 4:1,1,2,2; do
    np=${c%%:*} grid=${c##*:}
    [ "$np" -le "$ngpu" ] || continue
    first=1
    for policy in ${LATKE_MULTI_POLICIES:-auto:1:host whole:1:host partial:1:host whole:0:host whole:1:device}; do
      IFS=: read -r ext prio signal <<< "$policy"
      [ "$np" = 1 ] && [ $first = 0 ] && continue
      first=0
      tag=bench_${grid//,/}_${ext}_prio${prio}_$signal
      LATKE_HALO_SIGNAL=$signal LATKE_DSLASH_EXTERIOR=$ext LATKE_COMM_PRIORITY=$prio run_np $np "$bin/latke-bench" dslash -latke_lattice $L -latke_grid $grid \
        -latke_precision double,single,half -latke_reconstruct 12 -latke_json "$out/$tag.json" > "$out/$tag.log" 2>&1
      rc=$?; status=$((status | rc))
      echo "== $np GPUs, grid $grid, exterior $ext, halo stream priority $([ $prio = 1 ] && echo high || echo default), signals $signal: exit $rc"
      grep -E "^halo exchange|^(dslash|matpc|full) |^        halo" "$out/$tag.log"
    done
  done
fi
if [[ $steps == *gauge* ]]; then
  for c in 1:1,1,1,1:1 4:1,1,1,4:1 4:1,1,2,2:1; do
    IFS=: read -r np grid p2p <<< "$c"
    [ "$np" -le "$ngpu" ] || continue
    tag=gauge_${grid//,/}_p2p$p2p
    LATKE_P2P=$p2p run_np $np "$bin/latke-gauge" generate -latke_lattice $L -latke_grid $grid -latke_beta 6.0 \
      -latke_start hot -latke_sweeps ${LATKE_MULTI_SWEEPS:-20} -latke_measure_every ${LATKE_MULTI_SWEEPS:-20} \
      > "$out/$tag.log" 2>&1; rc=$?; status=$((status | rc))
    echo "== generate $np GPUs, grid $grid, p2p $p2p: exit $rc"
    grep -E "^sweep|^generator" "$out/$tag.log" | tail -2
  done
fi
exit $status
