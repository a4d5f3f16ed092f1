#!/usr/bin/env bash
# Packs a CUDA build (build-gpu/ by default) for a GPU host that has no PETSc: the binaries
# into .gpu/bin and the shared libraries they need into .gpu/rt.tar.xz.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build-gpu}
mkdir -p "$here/.gpu/bin"
cp "$build"/bin/* "$here/.gpu/bin/"
# The faults tier's write-fault library (tests/faults/fault_inject.c), where it was built.
[ -f "$build/lib/liblatke_fault_inject.so" ] && cp "$build/lib/liblatke_fault_inject.so" "$here/.gpu/bin/"
# Only ELF files have libraries to bundle (latke-scale is a Python script). A binary on the public
# liblatke (embed_in_petsc) needs nothing the others do not, but that library: the same code as
# liblatke_private with only the C API exported, so one copy travels and host-env.sh names the
# private one liblatke.so.0 too.
elves=()
for f in "$here"/.gpu/bin/*; do
  [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  # ldd's output whole first: grep -q leaving early would fail the pipe (pipefail) by SIGPIPE.
  deps=$(ldd "$f")
  grep -q '^[[:space:]]*liblatke\.so\.0 ' <<<"$deps" || elves+=("$f")
done
"$here/../shared/gpu/runtime-bundle.sh" "$here/.gpu/rt.tar.xz" "${elves[@]}"
du -sh "$here/.gpu"
