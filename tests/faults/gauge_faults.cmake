# Faults in gauge-configuration input (issue 36): bad links in files, real options that are not
# finite, a directory given as a file, -latke_lattice against a file's own dimensions. Each
# must stop with a clear message (tests/support/expect_failure.sh), on one rank and on two
# where the bad link is on the second. Labels: faults, cli, gauge. Included from
# tests/CMakeLists.txt, where ${gauge}, ${solve} and ${mpi2} are set.
find_package(Python3 COMPONENTS Interpreter QUIET)
set(gauge_faults_env "OMP_NUM_THREADS=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")

function(latke_gauge_fault name regex)
  add_test(NAME faults_gauge_${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_failure.sh "${regex}" ${ARGN})
  set_tests_properties(faults_gauge_${name} PROPERTIES LABELS "faults;cli;gauge" ENVIRONMENT "${gauge_faults_env}")
endfunction()

# Real options: the option, the value and what was expected.
latke_gauge_fault(weak_spread_nan "-latke_weak_spread nan: expected a finite number of 0 or more"
                  ${gauge} generate -latke_lattice 4,4,4,4 -latke_start weak -latke_weak_spread nan -latke_sweeps 1
                  -latke_output ${CMAKE_CURRENT_BINARY_DIR}/faults_weak_nan.nersc)
latke_gauge_fault(weak_spread_negative "-latke_weak_spread -0.5: expected a finite number of 0 or more"
                  ${gauge} generate -latke_lattice 4,4,4,4 -latke_start weak -latke_weak_spread -0.5 -latke_sweeps 0)
latke_gauge_fault(weak_spread_overflow "the weak start with -latke_weak_spread 1e\\+300 gave links that deviate from SU.3."
                  ${gauge} generate -latke_lattice 4,4,4,4 -latke_start weak -latke_weak_spread 1e300 -latke_sweeps 0)
latke_gauge_fault(beta_nan "-latke_beta nan: expected a coupling of 0 or more .a finite number."
                  ${gauge} generate -latke_lattice 4,4,4,4 -latke_beta nan -latke_sweeps 1)
latke_gauge_fault(beta_inf "-latke_beta inf: expected a coupling of 0 or more" ${gauge} generate -latke_beta inf)
latke_gauge_fault(solve_gauge_spread_nan "-latke_gauge_spread nan: expected a finite number"
                  ${solve} -latke_lattice 4,4,4,4 -latke_gauge random -latke_gauge_spread nan)
latke_gauge_fault(solve_gauge_beta_nan "-latke_gauge_beta nan: expected a coupling of 0 or more"
                  ${solve} -latke_lattice 4,4,4,4 -latke_gauge_beta nan -latke_gauge_cache "")
latke_gauge_fault(solve_gauge_beta_negative "-latke_gauge_beta -6: expected a coupling of 0 or more"
                  ${solve} -latke_lattice 4,4,4,4 -latke_gauge_beta -6 -latke_gauge_cache "")

# A directory given as a gauge file.
latke_gauge_fault(measure_directory "${CMAKE_CURRENT_BINARY_DIR} is a directory, expected a gauge configuration file .NERSC or ILDG."
                  ${gauge} measure ${CMAKE_CURRENT_BINARY_DIR})
latke_gauge_fault(solve_directory "${CMAKE_CURRENT_BINARY_DIR} is a directory, expected a gauge configuration file .NERSC or ILDG."
                  ${solve} -latke_gauge ${CMAKE_CURRENT_BINARY_DIR})

# Files with bad links (tests/faults/make_bad_gauge.py: checksums right, so only the check of
# the links can refuse them).
if(Python3_Interpreter_FOUND)
  set(bad ${CMAKE_CURRENT_BINARY_DIR}/faults_gauge_files)
  add_test(NAME faults_gauge_files COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/faults/make_bad_gauge.py ${bad})
  set_tests_properties(faults_gauge_files PROPERTIES LABELS "faults;cli;gauge" FIXTURES_SETUP gauge_fault_files)
  set(nan_site "the link at site .x,y,z,t. = .1,2,3,3., mu 2 is not finite .entry .0..1. = .nan, 0..; 1 of 1024 links are not finite")
  latke_gauge_fault(measure_nan "nan.nersc: ${nan_site}" ${gauge} measure ${bad}/nan.nersc)
  latke_gauge_fault(measure_nan_accepted "nan.nersc: ${nan_site}" ${gauge} measure ${bad}/nan.nersc -latke_gauge_accept_nonunitary)
  latke_gauge_fault(measure_twice
                    "twice.nersc: the link at site .x,y,z,t. = .0,0,0,0., mu 0 is not in SU.3.: max .*= 3, .det U - 1. = 7 .tolerance 1e-10 for 64-bit data.; 1024 of 1024 links deviate"
                    ${gauge} measure ${bad}/twice.nersc)
  latke_gauge_fault(measure_zero
                    "zero.nersc: the link at site .x,y,z,t. = .0,0,0,0., mu 0 is not in SU.3.: max .*= 1, .det U - 1. = 1 .tolerance 1e-10"
                    ${gauge} measure ${bad}/zero.nersc)
  latke_gauge_fault(convert_twice "twice.nersc: the link at site .x,y,z,t. = .0,0,0,0., mu 0 is not in SU.3."
                    ${gauge} convert ${bad}/twice.nersc ${bad}/twice.lime)
  latke_gauge_fault(solve_nan "nan.nersc: ${nan_site}" ${solve} -latke_gauge ${bad}/nan.nersc)
  latke_gauge_fault(solve_twice "twice.nersc: the link at site .x,y,z,t. = .0,0,0,0., mu 0 is not in SU.3." ${solve} -latke_gauge ${bad}/twice.nersc)
  # Two ranks: the NaN link (t = 3) is on rank 1; every rank stops with rank 1's message.
  latke_gauge_fault(measure_nan_np2 "nan.nersc: ${nan_site}" ${mpi2} ${gauge} measure ${bad}/nan.nersc -latke_grid 1,1,1,2)
  latke_gauge_fault(solve_nan_np2 "nan.nersc: ${nan_site}" ${mpi2} ${solve} -latke_gauge ${bad}/nan.nersc -latke_grid 1,1,1,2)
  # -latke_lattice given with a file that brings its own: an error when they differ, fine when equal.
  latke_gauge_fault(measure_lattice_conflict "-latke_lattice 8,8,8,8 disagrees with .*unit.nersc, which holds a 4x4x4x4 lattice"
                    ${gauge} measure ${bad}/unit.nersc -latke_lattice 8,8,8,8)
  latke_gauge_fault(solve_lattice_conflict
                    "-latke_lattice 4,4,4,8 disagrees with the gauge file .*unit.nersc, which holds a 4x4x4x4 lattice"
                    ${solve} -latke_gauge ${bad}/unit.nersc -latke_lattice 4,4,4,8)
  set_tests_properties(faults_gauge_measure_nan faults_gauge_measure_nan_accepted faults_gauge_measure_twice
                       faults_gauge_measure_zero faults_gauge_convert_twice faults_gauge_solve_nan faults_gauge_solve_twice
                       faults_gauge_measure_nan_np2 faults_gauge_solve_nan_np2 faults_gauge_measure_lattice_conflict
                       faults_gauge_solve_lattice_conflict PROPERTIES FIXTURES_REQUIRED gauge_fault_files)
  set_tests_properties(faults_gauge_measure_nan_np2 faults_gauge_solve_nan_np2 PROPERTIES
                       LABELS "faults;cli;gauge;mpi" PROCESSORS 2)
  # What is accepted: the opt-out reads 2U (plaquette 16), and an equal -latke_lattice is fine.
  add_test(NAME faults_gauge_measure_twice_accepted
           COMMAND ${gauge} measure ${bad}/twice.nersc -latke_gauge_accept_nonunitary -latke_lattice 4,4,4,4)
  set_tests_properties(faults_gauge_measure_twice_accepted PROPERTIES LABELS "faults;cli;gauge"
    FIXTURES_REQUIRED gauge_fault_files ENVIRONMENT "${gauge_faults_env}"
    PASS_REGULAR_EXPRESSION "plaquette +16[.]0+\n.*unitarity deviation 7[.]000e[+]00")
  add_test(NAME faults_gauge_solve_lattice_equal
           COMMAND ${solve} -latke_gauge ${bad}/unit.nersc -latke_lattice 4,4,4,4 -ksp_type gcr -pc_type none)
  set_tests_properties(faults_gauge_solve_lattice_equal PROPERTIES LABELS "faults;cli;gauge"
    FIXTURES_REQUIRED gauge_fault_files ENVIRONMENT "${gauge_faults_env}" PASS_REGULAR_EXPRESSION "CONVERGED_RTOL")
else()
  message(STATUS "Latke: no python3, so the fault tests with bad gauge files are not registered")
endif()
