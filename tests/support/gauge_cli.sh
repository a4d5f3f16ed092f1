#!/bin/sh
# gauge_cli.sh LATKE_GAUGE MPIEXEC: latke-gauge end to end in a scratch directory. generate
# (one rank and two, which must write the same links), measure, info, convert through every
# format and back, continue a chain from a file, analyze a history; and a write that fails
# midway (file size limit) must leave the existing file as it was. Exits non-zero on the
# first failure, saying what failed.
set -u
gauge=$1; mpiexec=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/latke-gauge-cli.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail() { echo "FAILED: $*"; exit 1; }
run() { echo "+ $*"; "$@" > out.txt 2>&1 || { cat out.txt; fail "$* (exit $?)"; }; cat out.txt; }
expect() { grep -Eq -- "$1" out.txt || fail "output does not match '$1'"; }

run "$gauge" generate -latke_lattice 4,4,4,8 -latke_beta 5.8 -latke_sweeps 6 -latke_measure_every 2 \
    -latke_seed 9 -latke_output a.nersc -latke_history h.txt -latke_json g.json
expect '^sweep +6  plaq 0\.[0-9]+'
expect 'link updates/s'
expect 'wrote a.nersc \(NERSC 4D_SU3_GAUGE_3x3, IEEE64BIG, heat-bath pass 6\)'
plaq=$(sed -n 's/^PLAQUETTE = //p' a.nersc)
# The JSON record (schema latke-gauge/1): the run, and the measurements the table holds.
json_check() { python3 -c "import json, sys; r = json.load(open(sys.argv[1])); $2" "$1" || fail "$1: $2"; }
json_check g.json "assert r['schema'] == 'latke-gauge/1' and r['command'] == 'generate' and r['beta'] == 5.8 \
and r['lattice'] == [4, 4, 4, 8] and [m['sweep'] for m in r['measurements']] == [0, 2, 4, 6] \
and abs(r['measurements'][-1]['plaquette'] - float(open('h.txt').read().split()[-7])) < 1e-12 \
and r['link_updates_per_second'] > 0"

run "$mpiexec" -n 2 --oversubscribe "$gauge" generate -latke_lattice 4,4,4,8 -latke_beta 5.8 -latke_sweeps 6 \
    -latke_measure_every 0 -latke_seed 9 -latke_output b.nersc -latke_backend cpu
[ "$(sed -n 's/^PLAQUETTE = //p' b.nersc)" = "$plaq" ] || fail "1 and 2 ranks wrote different PLAQUETTE values"
[ "$(tail -c 294912 a.nersc | cksum)" = "$(tail -c 294912 b.nersc | cksum)" ] || fail "1 and 2 ranks made different links"

run "$gauge" measure a.nersc -latke_json m.json
expect "plaquette +${plaq}"
json_check m.json "assert r['command'] == 'measure' and abs(r['observables']['plaquette'] - ${plaq}) < 1e-12"
run "$gauge" info a.nersc
expect 'DATATYPE = 4D_SU3_GAUGE_3x3'
expect 'dimensions  4x4x4x8'

run "$gauge" convert a.nersc c.lime -latke_file_precision single
expect 'to c.lime \(ILDG, IEEE32 big endian\)'
run "$gauge" info c.lime
expect 'ildg-binary-data  147456 bytes'
expect 'scidac-checksum'
run "$gauge" convert c.lime d.nersc -latke_nersc_datatype 3x2 -latke_endian little
expect 'NERSC 4D_SU3_GAUGE \(3x2\), IEEE32LITTLE'
run "$mpiexec" -n 2 --oversubscribe "$gauge" convert d.nersc e.lime -latke_file_precision double -latke_backend cpu
run "$gauge" measure e.lime
expect 'plaquette +0\.[0-9]+'
p0=$(echo "$plaq" | cut -c1-8)
grep -q "plaquette *${p0}" out.txt || fail "plaquette after single precision round trips is not $plaq to 6 digits"

# Continuing from a file is the same as not stopping: 6 sweeps + 2 = 8 sweeps.
run "$gauge" generate -latke_input a.nersc -latke_beta 5.8 -latke_sweeps 2 -latke_seed 9 -latke_output f.nersc \
    -latke_measure_every 0
expect 'from a.nersc \(heat-bath pass 6\)'
run "$gauge" generate -latke_lattice 4,4,4,8 -latke_beta 5.8 -latke_sweeps 8 -latke_seed 9 -latke_output g.nersc \
    -latke_measure_every 0
[ "$(tail -c 294912 f.nersc | cksum)" = "$(tail -c 294912 g.nersc | cksum)" ] || fail "a continued chain differs"

run "$gauge" analyze h.txt -latke_therm 2 -latke_expect 0.5 -latke_expect_error 0.01 -latke_json an.json
expect '^plaquette|h.txt: plaquette, 3 measurements at sweeps 2..6'
expect '^result +0\.[0-9]+ \+- 0\.[0-9]+'
expect 'sigma'
mean=$(sed -n 's/^mean *//p' out.txt)
json_check an.json "assert r['command'] == 'analyze' and r['measurements'] == 3 and r['first_sweep'] == 2 \
and abs(r['mean'] - ${mean}) < 1e-9 and r['expected']['value'] == 0.5"

# Gauge fixing: Coulomb on 2 ranks (Fourier-accelerated by default, across the ranks), Landau on
# 1 by overrelaxation; the plaquette is kept, theta is below the tolerance, and a fixing that
# does not converge writes nothing (an existing file stays).
run "$mpiexec" -n 2 --oversubscribe "$gauge" fix e.lime fc.lime -latke_backend cpu -latke_json fc.json
expect 'e.lime: coulomb gauge \(fourier\), theta [0-9.]+e-1[3-9] after [0-9]+ iterations'
run "$gauge" fix e.lime fl.nersc -latke_gauge_fix landau -latke_gauge_fix_tol 1e-10 -latke_gauge_fix_method overrelax
expect 'landau gauge \(overrelax\), theta [0-9.]+e-1[1-9] after'
expect 'wrote fl.nersc \(NERSC'
for f in fc.lime fl.nersc; do
  run "$gauge" measure $f
  grep -q "plaquette *${p0}" out.txt || fail "$f: the plaquette changed with gauge fixing"
done
json_check fc.json "assert r['command'] == 'fix' and r['gauge'] == 'coulomb' and r['method'] == 'fourier' and r['theta'] < 1e-12"
before=$(cksum < fl.nersc)
"$gauge" fix e.lime fl.nersc -latke_gauge_fix landau -latke_gauge_fix_max_iter 2 > out.txt 2>&1 && fail "an unconverged fix succeeded"
expect 'did not converge: theta .* after 2 iterations, expected below 1e-12; fl.nersc not written'
[ "$(cksum < fl.nersc)" = "$before" ] || fail "an unconverged fix changed fl.nersc"

# A write that the file system refuses midway (file size limit) leaves the old file.
before=$(cksum < a.nersc)
# (MPI's start-up writes files of a few MB; the 16^4 links written here are 38 MB.)
( trap '' XFSZ; ulimit -f 32768; exec "$gauge" generate -latke_lattice 16,16,16,16 -latke_start cold -latke_sweeps 0 \
    -latke_measure_every 0 -latke_output a.nersc ) > out.txt 2>&1 && { cat out.txt; fail "a write beyond the file size limit succeeded"; }
cat out.txt
expect 'latke-gauge: error: a.nersc: writing a.nersc.tmp-[0-9]+ failed'
[ "$(cksum < a.nersc)" = "$before" ] || fail "the failed write changed a.nersc"
ls | grep -q 'tmp-' && fail "a temporary file was left behind: $(ls)"
echo "all latke-gauge checks passed"
