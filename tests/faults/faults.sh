#!/usr/bin/env bash
# faults.sh CASE: one case of the faults tier. Each case runs a Latke program into a fault (a
# variable preconditioner under a method that assumes a fixed one, a solve that misses its
# tolerance, a full disk, a missing directory, a writer killed mid-write, a damaged file, one
# failing rank of several) and asserts the exit status, the message (it names the input) and
# that an earlier good file is intact. The programs and the fault library come from the
# environment: LATKE_SOLVE, LATKE_BENCH, LATKE_GAUGE, LATKE_EMBED, LATKE_PROPAGATOR, LATKE_MPIEXEC,
# LATKE_FAULT_LIB.
set -u
case_name=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/latke-faults.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
solve=$LATKE_SOLVE bench=$LATKE_BENCH gauge=$LATKE_GAUGE embed=$LATKE_EMBED mpiexec=$LATKE_MPIEXEC
propagator=$LATKE_PROPAGATOR
small=(-latke_lattice 4,4,4,8 -latke_gauge random)

fail() { echo "FAILED ($case_name): $*"; exit 1; }
# run EXPECTED_STATUS CMD...: EXPECTED_STATUS is "ok" (0) or "error" (non-zero and no time-out:
# a hang is a failure here). Output in out.txt.
run() {
  local want=$1; shift
  echo "+ $*"
  timeout -k 5 120 "$@" > out.txt 2>&1
  status=$?
  cat out.txt
  [ $status -eq 124 ] || [ $status -eq 137 ] && fail "the command hung (stopped after 120 s)"
  if [ "$want" = ok ]; then [ $status -eq 0 ] || fail "exit status $status, expected 0"
  else [ $status -ne 0 ] || fail "exit status 0, expected an error"; fi
}
expect() { grep -Eq -- "$1" out.txt || fail "the output does not match '$1'"; }
refuse() { grep -Eq -- "$1" out.txt && fail "the output matches '$1'"; return 0; }
intact() { [ "$(cat "$1")" = "$2" ] || fail "$1 changed: '$(head -c 200 "$1")'"; }
no_temporaries() { local t; t=$(find "$work" -name '*.tmp-*'); [ -z "$t" ] || fail "temporary files left: $t"; }
full_disk=(env LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full")

case $case_name in
nonflexible_ksp)
  # Latke's preconditioners are variable: a method that assumes a fixed one is refused, in
  # latke-solve and in any PETSc program (embed_in_petsc), naming the flexible methods.
  for k in gmres bcgs tfqmr cg; do
    run error "$solve" "${small[@]}" -ksp_type $k
    expect "-ksp_type $k cannot use -pc_type latke_mg: Latke's preconditioners are variable"
    expect "Use a flexible method: -ksp_type fgmres, gcr, fbcgs or richardson"
  done
  run error "$solve" "${small[@]}" -ksp_type gmres -ksp_pc_side right
  expect "-ksp_type gmres cannot use -pc_type latke_mg"
  run error "$solve" "${small[@]}" -ksp_type gmres -pc_type latke_schwarz -pc_latke_schwarz_block 4,4,4,4
  expect "-ksp_type gmres cannot use -pc_type latke_schwarz"
  run error "$embed" "${small[@]}" -ksp_type bcgs -pc_type latke_mg
  expect "-ksp_type bcgs cannot use -pc_type latke_mg"
  # The flexible ones still solve.
  for k in fgmres gcr richardson; do
    run ok "$solve" "${small[@]}" -ksp_type $k -pc_type latke_schwarz -pc_latke_schwarz_block 4,4,4,4 -ksp_max_it 2000
    expect "CONVERGED_RTOL"
  done
  ;;
true_residual_decides)
  # The exit status follows the true residual with the double-precision full operator.
  run error "$solve" "${small[@]}" -ksp_type preonly -pc_type none
  expect "did not converge: KSPConvergedReason CONVERGED_ITS, true residual [0-9.]+e-0[0-9] .full operator in double."
  run error "$solve" "${small[@]}" -ksp_type richardson -ksp_norm_type none -ksp_max_it 3 -pc_type none
  expect "did not converge: KSPConvergedReason CONVERGED_ITS"
  run error "$solve" "${small[@]}" -ksp_type gcr -pc_type none -ksp_max_it 3 -latke_json s.json
  grep -q '"converged": false' s.json || fail "s.json does not say converged false"
  # An operator stored in single precision cannot give a residual of 1e-10 in double: the KSP
  # reports convergence, the check does not.
  run error "$solve" "${small[@]}" -latke_precision single -pc_type none -ksp_type bcgs
  expect "true residual [0-9.]+e-0[5-8] .full operator in double"
  expect "did not converge"
  run ok "$solve" "${small[@]}" -latke_precision single -pc_type none -ksp_type bcgs -ksp_rtol 1e-5
  expect "CONVERGED_RTOL"
  # embed_in_petsc, the pattern users copy, does the same.
  run error "$embed" "${small[@]}" -ksp_type gcr -ksp_max_it 3
  expect "NOT converged"
  [ $status -eq 2 ] || fail "embed_in_petsc exit status $status, expected 2"
  run ok "$embed" "${small[@]}" -ksp_type gcr
  expect "CONVERGED_RTOL .*true residual [0-9.]+e-1[0-9]"
  # Its errors end in PETSc's message, with MPI finalized (no Open MPI complaint after it).
  run error "$embed" -latke_lattice 4,4,3,4 -latke_gauge random
  expect "local extent 3 in dimension 2"
  refuse "ORTE_ERROR_LOG"
  ;;
solves_on_after_a_miss)
  # A solve that converged on the even-odd system but missed the full residual's tolerance by a
  # hair solves on from its solution and succeeds. On the quenched 8^3x16 configuration at
  # kappa 0.136 the clover term makes the full residual 1% larger than the even-odd one: native
  # GCR ends at 9.94e-11 with 1.006e-10 in full, PETSc's GMRES at 1.004e-10. Natively, through
  # a KSP, and at -latke_kappas (a new matrix) alike.
  hair=(-latke_lattice 8,8,8,16 -latke_kappa 0.136 -latke_csw 1.769 -latke_kappas 0.136)
  run ok "$solve" "${hair[@]}" -latke_native -latke_solver gcr -latke_json s.json
  expect "true residual 1[.]0[0-9]+e-10 above the tolerance 1[.]0e-10: solving on from the solution with -latke_solver_tol [0-9.]+e-11"
  expect "solved on from the solution 1 time"
  expect "kappa 0[.]136: .*true residual [0-9.]+e-11"
  grep -q '"refinements": 1' s.json || fail "s.json does not count the pass"
  run ok "$solve" "${hair[@]}" -ksp_type gmres -pc_type none
  expect "solving on from the solution with -ksp_rtol [0-9.]+e-11"
  expect "kappa 0[.]136: .*true residual [0-9.]+e-11"
  ;;
option_values)
  # Integer options out of PetscInt's range are refused, not wrapped; a bad value names its option.
  run error "$solve" "${small[@]}" -latke_solves 4294967297
  expect "-latke_solves 4294967297: out of range: expected an integer from -2147483648 to 2147483647"
  run error "$solve" -latke_lattice 4,4,4,8 -latke_gauge_sweeps 3000000000 -latke_gauge_cache ""
  expect "-latke_gauge_sweeps 3000000000: out of range"
  run error "$solve" "${small[@]}" -latke_solves 2x
  expect "-latke_solves '2x': expected an integer"
  # PETSc's named values stay PETSc's to read.
  run ok "$solve" "${small[@]}" -latke_source_seed PETSC_DEFAULT
  expect "CONVERGED_RTOL"
  run error "$solve" "${small[@]}" -latke_csw abc
  expect "-latke_csw 'abc': expected a number"
  run error "$solve" "${small[@]}" -latke_boundary 1,1,1,2
  expect "-latke_boundary '1,1,1,2': entry 4 .t. is 2: expected 1 or -1"
  run error "$solve" "${small[@]}" -pc_latke_mg_setup_iterations 99999999999
  expect "-pc_latke_mg_setup_iterations '99999999999': item 1 is out of range"
  ;;
memory)
  # A lattice too large for a rank is refused with what it needs and what there is.
  run error "$solve" -latke_lattice 192,192,192,192 -latke_gauge random
  expect "out of host memory: the gauge field of a 1358954496-site local lattice in double precision needs [0-9.]+ GiB per rank .host: [0-9.]+ GiB available of [0-9.]+ GiB"
  run error "$solve" -latke_lattice 512,512,512,512 -latke_gauge random
  expect "local volume 68719476736 sites .lattice 512,512,512,512 on grid 1,1,1,1.: more than the 4294967294 sites per rank"
  ;;
json_full_disk)
  # A full disk under -latke_json (latke-solve, latke-bench): an error naming the file, the
  # earlier file intact, no temporary left.
  mkdir full && echo previous > full/s.json && echo previous > full/b.json
  run error "${full_disk[@]}" "$solve" "${small[@]}" -latke_json full/s.json
  expect "-latke_json full/s.json: writing full/s.json.tmp-[0-9]+ failed after 0 of [0-9]+ bytes .No space left on device.; full/s.json is kept as it was"
  intact full/s.json previous
  run error env LATKE_FAULT_FULL_AFTER=100 LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full" \
      "$solve" "${small[@]}" -latke_json full/s.json
  expect "failed after 100 of [0-9]+ bytes"
  intact full/s.json previous
  run error "${full_disk[@]}" "$bench" dslash -latke_lattice 4,4,4,4 -latke_iterations 2 -latke_json full/b.json
  expect "-latke_json full/b.json: writing .* failed .*No space left on device"
  intact full/b.json previous
  no_temporaries
  ;;
solution_full_disk)
  mkdir full && echo previous > full/x.bin
  run error env LATKE_FAULT_FULL_AFTER=1000 LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full" \
      "$solve" "${small[@]}" -latke_save_solution full/x.bin
  expect "full/x.bin: writing full/x.bin.tmp-[0-9]+ failed .*; full/x.bin is kept as it was"
  intact full/x.bin previous
  no_temporaries
  # On two ranks, rank 0 writes: both ranks stop with the message, none hangs.
  run error "$mpiexec" -n 2 env LATKE_FAULT_FULL_AFTER=1000 LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full" \
      "$solve" "${small[@]}" -latke_save_solution full/x.bin
  expect "full/x.bin is kept as it was"
  intact full/x.bin previous
  no_temporaries
  # And a good write still works, atomically, with nothing beside it.
  run ok "$solve" "${small[@]}" -latke_save_solution x.bin
  [ "$(stat -c %s x.bin)" = $((8 + 4 * 4 * 4 * 8 * 12 * 16)) ] || fail "x.bin has $(stat -c %s x.bin) bytes"
  [ "$(ls)" = "$(printf 'full\nout.txt\nx.bin')" ] || fail "unexpected files: $(ls)"
  ;;
propagator_full_disk)
  # latke-propagator's record and propagator file on a full disk (one rank: parallel HDF5 has
  # no way back from a write that fails on one rank of several): an error naming the file, the
  # earlier files intact, no temporary left.
  mkdir full && echo previous > full/p.json && echo previous > full/p.h5
  prop=("$propagator" -latke_lattice 4,4,4,8 -latke_gauge random -latke_kappas 0.12)
  run error "${full_disk[@]}" "${prop[@]}" -latke_json full/p.json
  expect "-latke_json full/p.json: writing full/p.json.tmp-[0-9]+ failed .*full/p.json is kept as it was"
  intact full/p.json previous
  run error env LATKE_FAULT_FULL_AFTER=20000 LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full" \
      "${prop[@]}" -latke_json p.json -latke_save_propagator full/p.h5
  expect "-latke_save_propagator full/p.h5: not completed; removed full/p.h5.tmp-[0-9]+, full/p.h5 is kept as it was"
  intact full/p.h5 previous
  no_temporaries
  # And a good write works, with nothing beside it.
  run ok "${prop[@]}" -latke_json p.json -latke_save_propagator p.h5
  expect "propagators written to p.h5"
  [ -s p.h5 ] || fail "p.h5 is empty"
  ;;
gauge_full_disk)
  # A configuration written to a full disk, on one rank and with rank 0 of two failing: the
  # message names the file and the reason (not "MPI_SUCCESS"), the earlier file is intact.
  mkdir full
  run ok "$gauge" generate -latke_lattice 4,4,4,4 -latke_start cold -latke_sweeps 0 -latke_measure_every 0 \
      -latke_output full/a.nersc
  before=$(cksum < full/a.nersc)
  run error "${full_disk[@]}" "$gauge" generate -latke_lattice 4,4,4,4 -latke_sweeps 1 -latke_measure_every 0 \
      -latke_output full/a.nersc
  expect "full/a.nersc: writing full/a.nersc.tmp-[0-9]+ failed"
  refuse "MPI_SUCCESS"
  [ "$(cksum < full/a.nersc)" = "$before" ] || fail "full/a.nersc changed"
  run error "$mpiexec" -n 2 env LATKE_FAULT_RANK=0 LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_FULL="$work/full" \
      "$gauge" generate -latke_lattice 4,4,4,4 -latke_sweeps 1 -latke_measure_every 0 -latke_output full/a.nersc \
      -latke_backend cpu
  expect "full/a.nersc: writing full/a.nersc.tmp-[0-9]+ failed"
  refuse "MPI_SUCCESS"
  [ "$(cksum < full/a.nersc)" = "$before" ] || fail "full/a.nersc changed"
  no_temporaries
  ;;
outputs_checked_first)
  # Outputs that cannot be written are refused before the solve, on every rank.
  run error "$mpiexec" -n 2 "$solve" "${small[@]}" -latke_save_solution /nonexistent/x.bin
  expect "-latke_save_solution /nonexistent/x.bin: cannot write it: its directory /nonexistent does not exist"
  refuse "KSP|true residual"
  run error "$solve" "${small[@]}" -latke_json /etc/hostname/s.json
  expect "-latke_json /etc/hostname/s.json: cannot write it: /etc/hostname is not a directory"
  refuse "KSP|true residual"
  run error "$solve" "${small[@]}" -latke_json .
  expect "-latke_json .: cannot write it: it is a directory"
  run error "$bench" dslash -latke_lattice 4,4,4,4 -latke_json /nonexistent/b.json
  expect "-latke_json /nonexistent/b.json: cannot write it"
  refuse "GFLOPS"
  run error "$gauge" generate -latke_lattice 4,4,4,4 -latke_sweeps 2 -latke_output /nonexistent/a.nersc
  expect "-latke_output /nonexistent/a.nersc: cannot write it"
  refuse "sweep"
  run error "$gauge" generate -latke_lattice 4,4,4,4 -latke_sweeps 2 -latke_history /nonexistent/h.txt
  expect "-latke_history /nonexistent/h.txt: cannot write it"
  refuse "sweep"
  # The gauge cache: a path that cannot be a directory.
  run error "$solve" -latke_lattice 4,4,4,4 -latke_gauge_sweeps 2 -latke_gauge_cache /etc/hostname
  expect "-latke_gauge_cache /etc/hostname: cannot create the directory"
  ;;
killed_writer)
  # A writer killed while its write hangs removes its temporary file, says so, and leaves the
  # earlier file as it was (latke-gauge's configuration, latke-solve's solution).
  mkdir hang
  "$gauge" generate -latke_lattice 4,4,4,4 -latke_start cold -latke_sweeps 0 -latke_measure_every 0 \
      -latke_output hang/a.nersc > out.txt 2>&1 || { cat out.txt; fail "writing the first configuration"; }
  before=$(cksum < hang/a.nersc)
  for what in gauge solve; do
    if [ $what = gauge ]; then
      set -- "$gauge" generate -latke_lattice 8,8,8,8 -latke_start hot -latke_sweeps 1 -latke_measure_every 0 \
          -latke_output hang/a.nersc
      target=hang/a.nersc
    else
      echo previous > hang/x.bin
      set -- "$solve" "${small[@]}" -latke_save_solution hang/x.bin
      target=hang/x.bin
    fi
    env LD_PRELOAD="$LATKE_FAULT_LIB" LATKE_FAULT_HANG="$work/hang" "$@" > out.txt 2>&1 &
    pid=$!
    for _ in $(seq 600); do ls hang | grep -q 'tmp-' && break; sleep 0.1; done
    ls hang | grep -q 'tmp-' || { kill -KILL $pid; cat out.txt; fail "$what: no temporary file appeared"; }
    sleep 0.5
    kill -TERM $pid
    wait $pid
    status=$?
    cat out.txt
    [ $status -ne 0 ] || fail "$what: exit status 0 after SIGTERM"
    expect "latke: interrupted: removed the unfinished $target.tmp-[0-9]+; $target is kept as it was"
  done
  [ "$(cksum < hang/a.nersc)" = "$before" ] || fail "hang/a.nersc changed"
  intact hang/x.bin previous
  no_temporaries
  ;;
mg_file_damaged)
  # Null vectors saved by -pc_latke_mg_save, then cut short or changed: -pc_latke_mg_load
  # refuses them naming the damage.
  mg=(-latke_lattice 8,8,8,8 -latke_gauge random -pc_latke_mg_levels 2 -pc_latke_mg_block 2,2,2,2
      -pc_latke_mg_nvec 4 -pc_latke_mg_setup_iterations 3)
  run ok "$solve" "${mg[@]}" -pc_latke_mg_save null.bin
  size=$(stat -c %s null.bin)
  head -c $((size - 8192)) null.bin > short.bin
  run error "$solve" "${mg[@]}" -pc_latke_mg_load short.bin
  expect "short.bin: the file has $((size - 8192)) bytes, its header describes $size: the file is truncated"
  cp null.bin changed.bin
  printf '\x55' | dd of=changed.bin bs=1 seek=$((4096 + 8 * 1000)) conv=notrunc status=none
  run error "$solve" "${mg[@]}" -pc_latke_mg_load changed.bin
  expect "changed.bin: checksum mismatch in transfer 0"
  run ok "$solve" "${mg[@]}" -pc_latke_mg_load null.bin
  expect "CONVERGED_RTOL"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "PASSED ($case_name)"
