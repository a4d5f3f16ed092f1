#!/bin/sh
# out_of_tree.sh BUILD_DIR SOURCE_DIR WORK_DIR: install Latke from BUILD_DIR into a fresh
# prefix (whose programs must find the library they link), then build examples/embed_in_petsc.c
# against it twice (CMake find_package and pkg-config) and run both, each of which must converge;
# and a C++-only project's program through find_package.
set -eu
build=$1; src=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/latke/latke.h"
test -f "$work/prefix/lib/cmake/Latke/LatkeConfig.cmake"
test -f "$work/prefix/lib/pkgconfig/latke.pc"
# The installed programs find the private library they link beside liblatke (their run path).
for program in latke-solve latke-bench latke-gauge latke-propagator; do
  found=$(ldd "$work/prefix/bin/$program" | awk '$1 == "liblatke_private.so.0" {print $3}')
  [ -n "$found" ] && [ "$(realpath "$found")" = "$(realpath "$work/prefix/lib/liblatke_private.so.0")" ] ||
    { echo "installed $program does not find the installed liblatke_private:"; ldd "$work/prefix/bin/$program"; exit 1; }
done

echo "== CMake: find_package(Latke)"
cmake -S "$src/tests/install_consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DEXAMPLE_SOURCE="$src/examples/embed_in_petsc.c" > "$work/cmake.log"
cmake --build "$work/cmake" > "$work/cmake-build.log"
"$work/cmake/embed_in_petsc" -latke_lattice 4,4,4,8 -latke_gauge random -latke_backend cpu | tee "$work/run-cmake.log"
grep -q CONVERGED_RTOL "$work/run-cmake.log"

echo "== CMake: find_package(Latke) from a C++-only project"
cmake -S "$src/tests/install_consumer_cxx" -B "$work/cxx" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/cxx.log"
cmake --build "$work/cxx" > "$work/cxx-build.log"
"$work/cxx/latke_version" -latke_backend cpu | tee "$work/run-cxx.log"
grep -q "^Latke [0-9]*[.][0-9]*[.][0-9]* on cpu" "$work/run-cxx.log"

echo "== pkg-config latke"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cc -o "$work/embed_pc" "$src/examples/embed_in_petsc.c" $(pkg-config --cflags --libs latke)
"$work/embed_pc" -latke_lattice 4,4,4,8 -latke_gauge random -latke_backend cpu -ksp_type bcgs | tee "$work/run-pc.log"
grep -q CONVERGED_RTOL "$work/run-pc.log"
