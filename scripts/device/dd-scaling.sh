#!/usr/bin/env bash
# Runs on a GPU host (binaries from scripts/device/pack.sh): time to solution of the native
# mixed-precision BiCGstab against device-resident GCR + Schwarz (GCR's cycles in single,
# blocks in half, solved on chip or streamed; additive and SAP, one or more Schwarz cycles), on
# 1 GPU and on all the host's GPUs (one rank each, the lattice split in t), on a thermalized
# quenched configuration near the critical kappa (LATKE_DD_KAPPA, default 0.1345). Results under $OUT.  Environment: LATKE_DD_LATTICE (32,32,32,64),
# LATKE_DD_GAUGE, LATKE_DD_CASES (a grep pattern on the case names; default all), LATKE_DD_EXTRA
# (options for every case, e.g. -latke_solves 2 for a tuned second solve), LATKE_DD_SEEDS (the Z2
# sources' seeds, default 1; with several, each case also prints the median of its fastest
# times, an unconverged solve counting as infinite). The mg_* cases
# put the block solver in the multigrid as its fine smoother (additive or SAP). GCR with the
# Schwarz preconditioner restarts after 32 directions keeping 8 unless a case says otherwise
# (gcr_r16: the plain GCR(16) it had before; _rN_kM: N directions keeping M, _x with
# -latke_solver_deflate_exact; gcr_kc: over-relaxed blocks and 6 cycles, for kappa near kappa_c;
# _op: SAP's residual between colours recomputed with the MatPC instead of updated across block
# boundaries).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${LATKE_GPU_BIN:-$here/.gpu/bin}
out=${OUT:-$here/gpu-out}
mkdir -p "$out" /tmp/rt /tmp/latke-cache
[ -f "$here/.gpu/rt.tar.xz" ] && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
export LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
L=${LATKE_DD_LATTICE:-32,32,32,64}
gauge=${LATKE_DD_GAUGE:--latke_gauge quenched -latke_gauge_sweeps 300 -latke_gauge_cache /tmp/latke-cache -latke_kappa ${LATKE_DD_KAPPA:-0.1345} -latke_csw 1.769}
seeds=${LATKE_DD_SEEDS:-1}
status=0
ngpu=$(nvidia-smi -L | wc -l)
for np in $(echo 1 $ngpu | tr " " "\n" | sort -un); do  # 1 and all GPUs, once each
  grid=""; [ "$np" -gt 1 ] && grid="-latke_grid 1,1,1,$np"
  while read -r name opts; do
    [ -z "$name" ] && continue
    [[ $name =~ ${LATKE_DD_CASES:-.} ]] || continue
    fastest=()
    for seed in $seeds; do
      tag=dd_np${np}_$name label=$name
      [ "$seeds" = 1 ] || tag=${tag}_s$seed label="$name z2#$seed"
      log=$out/$tag.log
      OMP_NUM_THREADS=4 timeout ${LATKE_DD_TIMEOUT:-300} mpirun -np $np --bind-to none "$bin/latke-solve" -latke_lattice $L $gauge $grid -latke_source z2 -latke_source_seed $seed -latke_native $opts ${LATKE_DD_EXTRA:-} \
        -latke_json "$out/$tag.json" < /dev/null > "$log" 2>&1; rc=$?; status=$((status | rc))
      printf 'np=%d %-22s exit %d | %s | %s | %s | %s\n' $np "$label" $rc "$(grep -E '^  KSP' "$log" | sed 's/^ *KSP //')" \
        "$(grep -E 'operator applications' "$log" | sed 's/^ *//')" "$(grep -E '^  time' "$log" | sed 's/^ *time: //')" "$(grep -oE 'fastest [0-9.]+ s' "$log")"
      # An unconverged solve counts as never finishing.
      t=$(grep -oE 'fastest [0-9.]+ s' "$log" | awk '{print $2}'); [ "$rc" = 0 ] && [ -n "$t" ] || t=inf
      fastest+=("$t")
    done
    if [ ${#fastest[@]} -gt 1 ]; then  # near kappa_c one source says little: BiCGstab's iterations vary severalfold
      printf 'np=%d %-22s median over %d sources: %s s (%s)\n' $np "$name" ${#fastest[@]} \
        "$(python3 -c 'import statistics, sys; print(statistics.median(float(t) for t in sys.argv[1:]))' "${fastest[@]}")" "${fastest[*]}"
    fi
  done <<'CASES'
bicgstab_single -latke_solver bicgstab -latke_solver_sloppy single
bicgstab_half -latke_solver bicgstab -latke_solver_sloppy half
gcr_default -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz
gcr_dd4_8 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_type additive -pc_latke_schwarz_cycles 1
gcr_default_lane -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_half_pairs 0
gcr_dd4_8_lane -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_type additive -pc_latke_schwarz_cycles 1 -pc_latke_schwarz_half_pairs 0
gcr_dd4_8_streamed -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_on_chip 0 -pc_latke_schwarz_type additive -pc_latke_schwarz_cycles 1
gcr_dd8x4_8 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 8,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_type additive -pc_latke_schwarz_cycles 1
gcr_sap4_8 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 1
gcr_sap4_4x2 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 2
gcr_sap4_4x5 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 4,4,4,4 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 5
gcr_sap8x4_4x5 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 8,4,4,4 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 5
gcr_sap8x4_8 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 8,4,4,4 -pc_latke_schwarz_iterations 8 -pc_latke_schwarz_type multiplicative -pc_latke_schwarz_cycles 1
gcr_r16 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 16 -latke_solver_deflate 0
gcr_kc -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_omega 1.2 -pc_latke_schwarz_cycles 6
gcr_default_op -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_boundary_update 0
gcr_kc_op -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_omega 1.2 -pc_latke_schwarz_cycles 6 -pc_latke_schwarz_boundary_update 0
gcr_kc4 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_omega 1.2 -pc_latke_schwarz_cycles 6 -pc_latke_schwarz_block 4,4,4,4
gcr_default_r32_k16 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 32 -latke_solver_deflate 16
gcr_default_r64_k16 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 64 -latke_solver_deflate 16
gcr_default_r64_k32 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 64 -latke_solver_deflate 32
gcr_default_r32_k16x -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 32 -latke_solver_deflate 16 -latke_solver_deflate_exact
gcr_default_r64_k32x -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 64 -latke_solver_deflate 32 -latke_solver_deflate_exact
gcr_sap_w12 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_omega 1.2
gcr_default_r64 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 64 -latke_solver_deflate 0
gcr_default_r128 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -latke_solver_restart 128 -latke_solver_deflate 0
mg_mr -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc mg
mg_schwarz_add4 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc mg -latke_mg_levels_0_smoother schwarz
mg_sap4 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc mg -latke_mg_levels_0_smoother schwarz -latke_mg_levels_0_pc_latke_schwarz_type multiplicative
mg_sap8x4 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc mg -latke_mg_levels_0_smoother schwarz -latke_mg_levels_0_pc_latke_schwarz_type multiplicative -latke_mg_levels_0_pc_latke_schwarz_block 8,4,4,4
gcr_dd8_4 -latke_solver gcr -latke_solver_sloppy single -latke_solver_pc schwarz -pc_latke_schwarz_block 8,8,8,8 -pc_latke_schwarz_iterations 4 -pc_latke_schwarz_type additive -pc_latke_schwarz_cycles 1
CASES
done
exit $status
