#!/usr/bin/env bash
# Runs on a GPU host: latke-bench dslash (Wilson-clover; dslash and matpc in double, single
# and half) with the packed binaries (.gpu/bin) and with an earlier build packed as
# .gpu/base.tar.xz (bin/latke-bench and the library it links from lib/), alternating, LATKE_COMPARE_ROUNDS
# rounds (default 3), at LATKE_COMPARE_LATTICES (default 32,32,32,64 with reconstruct 12, and
# 16,16,16,16 with 18). What "latke-bench figures unchanged within noise" is measured with:
# the same machine, the same session, interleaved runs. Logs under $OUT; a table on stdout.
set -uo pipefail
source "$(dirname "$0")/host-env.sh"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
base=/tmp/latke-base
mkdir -p "$base" && tar -C "$base" -xJf "$here/.gpu/base.tar.xz" || { echo "no .gpu/base.tar.xz"; exit 2; }
status=0
for round in $(seq "${LATKE_COMPARE_ROUNDS:-3}"); do
  for which in base new; do
    for case in ${LATKE_COMPARE_LATTICES:-32,32,32,64:12 16,16,16,16:18}; do
      L=${case%%:*} r=${case##*:} tag=${which}_${round}_${L//,/x}
      if [ $which = base ]; then
        LD_LIBRARY_PATH=$base/lib:$LD_LIBRARY_PATH "$base/bin/latke-bench" dslash -latke_lattice $L \
          -latke_precision double,single,half -latke_reconstruct $r -latke_json "$out/$tag.json" > "$out/$tag.log" 2>&1
      else
        "$bin/latke-bench" dslash -latke_lattice $L -latke_precision double,single,half -latke_reconstruct $r \
          -latke_json "$out/$tag.json" > "$out/$tag.log" 2>&1
      fi
      rc=$?; status=$((status | rc)); [ $rc -eq 0 ] || echo "$tag: exit $rc"
    done
  done
done
python3 - "$out" <<'PY'
import json, glob, sys, os, collections, statistics
t = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], '*_*_*.json')):
    which, rnd, lat = os.path.basename(f)[:-5].split('_', 2)
    try: d = json.load(open(f))
    except Exception: continue
    for r in d.get('results', []):
        key = (lat, r.get('form'), r.get('precision'), r.get('reconstruct'))
        t[key + (which,)].append(r.get('us_per_call', r.get('time_us')))
print(f"{'lattice':>12} {'form':>6} {'prec':>7} {'recon':>5} {'base us (min/med)':>20} {'new us (min/med)':>20} {'new/base':>8}")
for key in sorted({k[:4] for k in t}):
    b, n = t[key + ('base',)], t[key + ('new',)]
    if not b or not n or None in b + n: continue
    print(f"{key[0]:>12} {key[1]:>6} {key[2]:>7} {key[3]!s:>5} {min(b):9.1f}/{statistics.median(b):<9.1f} "
          f"{min(n):9.1f}/{statistics.median(n):<9.1f} {statistics.median(n)/statistics.median(b):8.3f}")
PY
exit $status
