#!/bin/sh
# check_headers.sh SOURCE_DIR CXX CC FLAGS...: every installed header (include/latke) compiles
# on its own in a C++ translation unit, and the C API (latke/latke.h) in a C one, with only
# the include flags given (PETSc's and MPI's). Prints each header that does not.
src=$1 cxx=$2 cc=$3; shift 3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0
for h in $(cd "$src/include" && find latke -name '*.h' | sort); do
  printf '#include <%s>\n' "$h" > "$tmp/one.cpp"
  if ! "$cxx" -std=c++17 -fsyntax-only -I"$src/include" "$@" "$tmp/one.cpp" > "$tmp/err" 2>&1; then
    echo "C++: <$h> does not compile on its own:"; head -5 "$tmp/err"; status=1
  fi
done
printf '#include <latke/latke.h>\nint main(void) { return 0; }\n' > "$tmp/one.c"
if ! "$cc" -fsyntax-only -I"$src/include" "$@" "$tmp/one.c" > "$tmp/err" 2>&1; then
  echo "C: <latke/latke.h> does not compile:"; head -5 "$tmp/err"; status=1
fi
[ $status -eq 0 ] && echo "headers: every installed header compiles on its own (C++), latke.h in C"
exit $status
