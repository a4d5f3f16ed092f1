#!/usr/bin/env bash
# The Wilson-clover even-odd operator (symmetric MatPC, reconstruct 12) against QUDA's on one
# GPU host, one right-hand side and many: latke-bench dslash (its `matpc` row, and its `set` row
# over LATKE_PEER_NSRC fields) and QUDA's dslash_test (`--test MatPC --matpc even-even --nsrc N`),
# LATKE_PEER_ROUNDS rounds each (default 2; the first also tunes), and a table of microseconds
# per right-hand side from the last round, read from the logs under $out.
#
#   peer-dslash.sh latke | quda | table | all    (default all: latke, quda, then the table)
#
# QUDA is not part of Latke: build its dslash_test yourself (CUDA backend, the clover operator,
# reconstruct 12 and QUDA_MAX_MULTI_RHS at least the largest N) and name it in QUDA_DSLASH_TEST.
# Where the two cannot travel to the host together, run `latke` and `quda` in calls back to back
# on the same warm machine, bring both logs into one folder and run `table` there.
# LATKE_PEER_LATTICE (32,32,32,64), LATKE_PEER_PRECISIONS ("half single"), LATKE_PEER_NSRC (12),
# LATKE_PEER_GPUS (1): with N > 1 both run under mpirun on N ranks, one GPU each, the lattice
# split in t (Latke -latke_grid 1,1,1,N; QUDA --gridsize 1 1 1 N with its local --dim), which
# needs a dslash_test built with MPI.
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
what=${1:-all}
case $what in
  latke | quda | table | all) ;;
  *) echo "peer-dslash.sh: step '$what': expected latke, quda, table or all" >&2; exit 2 ;;
esac
lattice=${LATKE_PEER_LATTICE:-32,32,32,64}
precisions=${LATKE_PEER_PRECISIONS:-half single}
nsrc=${LATKE_PEER_NSRC:-12}
rounds=${LATKE_PEER_ROUNDS:-2}
gpus=${LATKE_PEER_GPUS:-1}
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || { echo "LATKE_PEER_GPUS '$gpus': expected a positive integer" >&2; exit 2; }
# On N ranks: mpirun, and the lattice split in t.
on_ranks() { if [ "$gpus" -gt 1 ]; then OMP_NUM_THREADS=4 mpirun -np "$gpus" --bind-to none "$@"; else "$@"; fi; }
device() { echo "$gpus x $(nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | head -1)"; }
status=0
export LATKE_RESOURCE_PATH=${LATKE_RESOURCE_PATH:-/tmp/latke-resources} QUDA_RESOURCE_PATH=${QUDA_RESOURCE_PATH:-/tmp/quda-resources}
mkdir -p "$LATKE_RESOURCE_PATH" "$QUDA_RESOURCE_PATH"

if [ "$what" = latke ] || [ "$what" = all ]; then
  device > "$out/peer_device_latke.txt"
  for ((r = 1; r <= rounds; ++r)); do
    on_ranks "$bin/latke-bench" dslash -latke_lattice "$lattice" -latke_grid "1,1,1,$gpus" \
      -latke_precision "${precisions// /,}" -latke_reconstruct 12 -latke_form matpc -latke_set "$nsrc" \
      -latke_json "$out/peer_latke_$r.json" > "$out/peer_latke_$r.log" 2>&1
    status=$((status | $?))
  done
fi

if [ "$what" = quda ] || [ "$what" = all ]; then
  if [ -z "${QUDA_DSLASH_TEST:-}" ] || [ ! -x "$QUDA_DSLASH_TEST" ]; then
    echo "QUDA_DSLASH_TEST '${QUDA_DSLASH_TEST:-}': expected QUDA's dslash_test (an executable); no QUDA runs"
    status=2
  else
    device > "$out/peer_device_quda.txt"
    IFS=, read -r X Y Z T <<< "$lattice"
    for ((r = 1; r <= rounds; ++r)); do
      for p in $precisions; do
        for n in 1 $nsrc; do
          on_ranks timeout -k 5 300 "$QUDA_DSLASH_TEST" --dslash-type clover --test MatPC --matpc even-even \
            --prec "$p" --recon 12 --gridsize 1 1 1 "$gpus" --dim "$X" "$Y" "$Z" $((T / gpus)) --nsrc "$n" --niter 100 \
            --verify false > "$out/peer_quda_${p}_n${n}_$r.log" 2>&1
          status=$((status | $?))
        done
      done
    done
  fi
fi

if [ "$what" = table ] || [ "$what" = all ]; then
  python3 - "$out" "$rounds" "$nsrc" "$precisions" <<'PY' || status=$((status | 1))
import json, os, re, sys
out, rnd, nsrc, precisions = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
def device(which):
    f = os.path.join(out, f"peer_device_{which}.txt")
    return open(f).read().strip() if os.path.exists(f) else "-"
latke = {}
f = os.path.join(out, f"peer_latke_{rnd}.json")
if os.path.exists(f):
    for r in json.load(open(f)).get("results", []):
        n = 1 if r.get("form") == "matpc" else nsrc if r.get("form") == "set" else None
        if n: latke[(r.get("precision"), n)] = r.get("time_us")
quda = {}
for p in precisions:
    for n in (1, nsrc):
        f = os.path.join(out, f"peer_quda_{p}_n{n}_{rnd}.log")
        m = re.search(r"([0-9.]+)us per kernel call", open(f).read()) if os.path.exists(f) else None
        if m: quda[(p, n)] = float(m.group(1)) / n
print(f"Latke on {device('latke')}; QUDA on {device('quda')}")
print(f"{'precision':>9} {'rhs':>4} {'Latke us/rhs':>13} {'QUDA us/rhs':>12} {'Latke/QUDA':>10}")
for p in precisions:
    for n in (1, nsrc):
        a, b = latke.get((p, n)), quda.get((p, n))
        cell = lambda v, w: f"{v:{w}.1f}" if v else f"{'-':>{w}}"
        ratio = f"{a / b:10.2f}" if a and b else f"{'-':>10}"
        print(f"{p:>9} {n:>4} {cell(a, 13)} {cell(b, 12)} {ratio}")
PY
fi
exit $status
