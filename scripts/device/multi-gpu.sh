#!/usr/bin/env bash
# Runs on a host with several GPUs, one MPI rank per GPU (each rank on its own device):
#   multi-gpu.sh [tests] [bench] [gauge] [mg]      (default: all four)
# tests: the MPI tiers (test_wilson_mpi, test_staggered_mpi, test_gauge_mpi, test_mg_mpi) on
#        2 and 4 GPUs for each transport: peer to peer with the copies' completion passed
#        through the host (host) or by CUDA IPC events (event), copies signalled on
#        the device (device), faces packed into the neighbours' buffers (device-pack), staged
#        MPI (LATKE_P2P=0); and the operators' exterior passes (overlap, partial)
#        and interior kernels (LATKE_MULTI_TIERS = signals:p2p:exterior[:interior] ...).
# bench: latke-bench dslash, Wilson-clover 32^3x64 reconstruct 12 (LATKE_MULTI_OP=asqtad or
#        staggered: links at 18 or 12), on 1, 2 (t split) and 4
#        GPUs (t, and z-t split; LATKE_MULTI_GRIDS = np:grid ...), for each policy of LATKE_MULTI_POLICIES (exterior pass:halo
#        stream priority:signals, LATKE_DSLASH_EXTERIOR, LATKE_COMM_PRIORITY and
#        LATKE_HALO_SIGNAL; default auto:1:host whole:1:host overlap:1:host whole:1:device):
#        time per application and its split (interior, faces packed, ghosts in, exterior).
# gauge: latke-gauge generate 32^3x64 at beta 6.0 on 1, 2 and 4 GPUs (t and z-t), the
#        exchange overlapped with the update or after it (LATKE_GAUGE_OVERLAP; LATKE_MULTI_GAUGE
#        = np:grid:p2p:overlap ...): link updates/s, and the plaquette, which must be the same
#        on every grid.
# mg:    native GCR + latke_mg solves of 32^3x64 at kappa 0.1351 on 1, 2 and 4 GPUs, the coarsest
#        solve direct or GCR, coarse levels gathered by the default rule or below a number of
#        sites per rank, onto the most ranks that leave each a number of sites
#        (LATKE_MULTI_MG = np:grid:coarse-solver[:gather-sites[:onto-sites]] ...; 0: spread;
#        e.g. 4:1,1,1,4:auto:2048:512 puts level 1 onto 2 of the 4 GPUs);
#        LATKE_MULTI_MG_OPTS adds options to every run (e.g. -log_view).
# Logs and JSON under $OUT; summaries on stdout. LATKE_MULTI_LATTICE overrides 32,32,32,64.
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/device.txt"
ngpu=$(nvidia-smi -L | wc -l)
steps=${*:-tests bench gauge mg}
L=${LATKE_MULTI_LATTICE:-32,32,32,64}
status=0
run_np() { local np=$1; shift; OMP_NUM_THREADS=4 timeout "${LATKE_MULTI_TIMEOUT:-240}" mpirun -np "$np" --bind-to none "$@"; }
if [[ $steps == *tests* ]]; then
  for np in 2 4; do
    [ "$np" -le "$ngpu" ] || continue
    # transport (LATKE_HALO_SIGNAL / LATKE_P2P) x exterior pass (LATKE_DSLASH_EXTERIOR)
    for c in ${LATKE_MULTI_TIERS:-host:1:auto event:1:auto device:1:whole device-pack:1:whole host:0:whole host:1:whole host:1:overlap device:1:overlap host:1:partial host:1:whole:lean host:1:overlap:lean}; do
      IFS=: read -r sig p2p ext interior <<< "$c"
      interior=${interior:-halo}
      tests="test_wilson_mpi test_staggered_mpi"
      [ "$ext" = auto ] || [ "$sig:$ext" = device:whole ] || [ "$p2p" = 0 ] || [ "$sig" = device-pack ] && tests="$tests test_gauge_mpi test_mg_mpi"
      [ "$ext" = partial ] || [ "$interior" = lean ] && tests=test_wilson_mpi
      [ "$ext" = auto ] && interior=
      for t in $tests; do
        log="$out/${t}_np${np}_${sig}_p2p${p2p}_$ext$interior.log"
        (if [ -n "$interior" ]; then export LATKE_WILSON_INTERIOR=$interior; fi
         LATKE_HALO_SIGNAL=$sig LATKE_P2P=$p2p LATKE_DSLASH_EXTERIOR=$ext run_np $np "$bin/$t" --gtest_brief=1) > "$log" 2>&1; rc=$?
        status=$((status | rc))
        echo "$t np=$np signals=$sig p2p=$p2p exterior=$ext ${interior:+interior=$interior }($np GPUs): exit $rc, $(grep -E 'PASSED|FAILED' "$log" | head -2 | tr '\n' ' ')"
      done
    done
  done
fi
if [[ $steps == *bench* ]]; then
  for c in ${LATKE_MULTI_GRIDS:-1:1,1,1,1 2:1,1,1,2 4:1,1,1,4 4:1,1,2,2}; do
    np=${c%%:*} grid=${c##*:}
    [ "$np" -le "$ngpu" ] || continue
    first=1
    for policy in ${LATKE_MULTI_POLICIES:-auto:1:host whole:1:host overlap:1:host whole:1:device}; do
      IFS=: read -r ext prio signal <<< "$policy"
      [ "$np" = 1 ] && [ $first = 0 ] && continue
      first=0
      op=${LATKE_MULTI_OP:-wilson}
      recon=12; [ "$op" = asqtad ] && recon=18
      tag=bench_${op}_${L//,/x}_${grid//,/}_${ext}_prio${prio}_$signal
      LATKE_HALO_SIGNAL=$signal LATKE_DSLASH_EXTERIOR=$ext LATKE_COMM_PRIORITY=$prio run_np $np "$bin/latke-bench" dslash -latke_op $op -latke_lattice $L -latke_grid $grid \
        -latke_precision double,single,half -latke_reconstruct $recon -latke_json "$out/$tag.json" > "$out/$tag.log" 2>&1
      rc=$?; status=$((status | rc))
      echo "== $np GPUs, grid $grid, exterior $ext, halo stream priority $([ $prio = 1 ] && echo high || echo default), signals $signal: exit $rc"
      grep -E "^halo exchange|^(dslash|matpc|full) |^        (halo|policy)" "$out/$tag.log"
    done
  done
fi
if [[ $steps == *gauge* ]]; then
  for c in ${LATKE_MULTI_GAUGE:-1:1,1,1,1:1:1 2:1,1,1,2:1:1 4:1,1,1,4:1:1 4:1,1,1,4:1:0 4:1,1,2,2:1:1 4:1,1,2,2:1:0}; do
    IFS=: read -r np grid p2p ov <<< "$c"
    [ "$np" -le "$ngpu" ] || continue
    tag=gauge_${grid//,/}_p2p${p2p}_overlap$ov
    LATKE_GAUGE_OVERLAP=$ov LATKE_P2P=$p2p run_np $np "$bin/latke-gauge" generate -latke_lattice $L -latke_grid $grid -latke_beta 6.0 \
      -latke_start hot -latke_sweeps ${LATKE_MULTI_SWEEPS:-20} -latke_measure_every ${LATKE_MULTI_SWEEPS:-20} \
      > "$out/$tag.log" 2>&1; rc=$?; status=$((status | rc))
    echo "== generate $np GPUs, grid $grid, p2p $p2p, exchange overlapped with the update $ov: exit $rc"
    grep -E "^sweep|^generator" "$out/$tag.log" | tail -2
  done
fi
if [[ $steps == *mg* ]]; then
  # Native GCR + latke_mg at kappa 0.1351 (c_sw 1.769, Z2 source) on 1, 2 and 4 GPUs split in t,
  # the coarsest solve direct (gathered on every rank) or GCR across the ranks.
  gauge="-latke_gauge quenched -latke_gauge_sweeps ${LATKE_MULTI_SWEEPS_MG:-100} -latke_gauge_cache /tmp/latke-cache"
  mkdir -p /tmp/latke-cache
  for c in ${LATKE_MULTI_MG:-1:1,1,1,1:auto 2:1,1,1,2:auto 2:1,1,1,2:auto:0 4:1,1,1,4:auto 4:1,1,1,4:auto:0}; do
    IFS=: read -r np grid coarse gather onto <<< "$c"
    [ "$np" -le "$ngpu" ] || continue
    tag=mg_${grid//,/}_$coarse${gather:+_gather$gather}${onto:+_onto$onto}
    run_np $np "$bin/latke-solve" -latke_lattice $L -latke_grid $grid $gauge -latke_kappa 0.1351 -latke_csw 1.769 \
      -latke_source z2 -latke_native -latke_solver gcr -latke_solver_pc mg -latke_solves 2 \
      -latke_mg_coarse_solver $coarse ${gather:+-pc_latke_mg_gather_sites $gather} \
      ${onto:+-pc_latke_mg_gather_onto_sites $onto} ${LATKE_MULTI_MG_OPTS:-} \
      -latke_json "$out/$tag.json" > "$out/$tag.log" 2>&1; rc=$?; status=$((status | rc))
    echo "== native GCR + MG, $np GPUs, grid $grid, coarsest solve $coarse${gather:+, gathered below $gather sites per rank}${onto:+ onto ranks of $onto}: exit $rc"
    grep -E "^  (KSP|true residual|time|solved|setup)|^latke-solve: (true residual|the solve)|coarsest|gathered|LatkeMG|LatkeHalo " "$out/$tag.log" | head -30
  done
fi
exit $status
