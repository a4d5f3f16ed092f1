#!/usr/bin/env bash
# Packs, for a GPU host without PETSc, a CUDA build of Latke made against the CUDA PETSc of
# scripts/build-petsc-cuda.sh (build-gpu-petsc/ by default) into .gpu-petsc/:
#   bin.tar.xz  its programs and test binaries (stripped)
#   rt.tar.xz   the shared libraries they need (stripped): liblatke_private, libpetsc,
#               BLAS/LAPACK and the Fortran runtime, OpenMP. Not packed: the C/C++ runtimes,
#               the MPI stack and the NVIDIA driver (as runtime-bundle.sh), nor the CUDA
#               toolkit's libraries (cudart, cuBLAS, cuSPARSE, cuSOLVER, cuFFT, cuRAND,
#               nvJitLink, nvtx): the GPU host has the same CUDA under /usr/local/cuda/lib64.
#   MANIFEST    what was packed, from which commit and PETSc, with sizes
# scripts/device/petsc-cuda.sh unpacks and runs them on the GPU host.
#
#   scripts/device/pack-petsc-cuda.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath "${1:-$here/build-gpu-petsc}")
out=$here/.gpu-petsc
[ -x "$build/bin/latke-solve" ] || { echo "pack-petsc-cuda: no $build/bin/latke-solve (build Latke with CUDA against the CUDA PETSc first)" >&2; exit 2; }
grep -q '^LATKE_ENABLE_CUDA:BOOL=ON' "$build/CMakeCache.txt" || { echo "pack-petsc-cuda: $build is not a CUDA build" >&2; exit 2; }
petsc=$(ldd "$build/bin/latke-solve" | awk '/libpetsc/{print $3; exit}')
[ -n "$petsc" ] || { echo "pack-petsc-cuda: latke-solve in $build does not link libpetsc" >&2; exit 2; }
grep -q 'libcudart' <<<"$(ldd "$petsc")" || { echo "pack-petsc-cuda: $petsc is not a PETSc with CUDA" >&2; exit 2; }

skip='^(libc|libm|libpthread|libdl|librt|ld-linux[^ ]*|libstdc\+\+|libgcc_s|libz|libcuda|libnvidia[^ ]*|libmpi[^ ]*|libopen-(rte|pal)|libhwloc|libevent[^ ]*|libpmix|libucx|libucp|libucs|libuct|libfabric|libibverbs|librdmacm|libnl-[^ ]*|libpsm[^ ]*)\.so'
cuda_toolkit='^(libcudart|libcublas|libcublasLt|libcusparse|libcusolver|libcusolverMg|libcufft|libcufftw|libcurand|libnvJitLink|libnvtx3interop|libnvrtc)\.so'
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$out"
for f in "$build"/bin/*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  cp "$f" "$stage/bin/"
done
unresolved=""
for bin in "$stage"/bin/*; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $name =~ $skip || $name =~ $cuda_toolkit ]] && continue
    # embed_in_petsc's public liblatke is the private one's code with only the C API exported:
    # one copy travels, and petsc-cuda.sh names the private one liblatke.so.0 too.
    [ "$name" = liblatke.so.0 ] && continue
    if [ "$path" = not ]; then unresolved+="$(basename "$bin"): $name"$'\n'; continue; fi
    [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
  done < <(ldd "$bin")
done
[ -z "$unresolved" ] || { echo "pack-petsc-cuda: unresolved here, so not packed:" >&2; printf '%s' "$unresolved" >&2; exit 1; }
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
tar -C "$stage" -cf - bin | xz -6 -T2 > "$out/bin.tar.xz"
tar -C "$stage" -cf - lib | xz -6 -T2 > "$out/rt.tar.xz"
{
  echo "commit $(git -C "$here" rev-parse HEAD)$(git -C "$here" diff --quiet || echo ' (with uncommitted changes)')"
  echo "build $build"
  echo "petsc $petsc ($(basename "$(readlink -f "$petsc")"))"
  echo "cuda $(grep -E '^CMAKE_CUDA_(COMPILER|ARCHITECTURES)[:=]' "$build/CMakeCache.txt" | tr '\n' ' ')"
  echo "bin: $(ls "$stage/bin" | tr '\n' ' ')"
  echo "lib: $(ls "$stage/lib" | tr '\n' ' ')"
  echo "needed from the GPU host's CUDA (not packed): $(for b in "$stage"/bin/* "$stage"/lib/*; do ldd "$b"; done 2>/dev/null |
    awk '{print $1}' | grep -E "$cuda_toolkit|^libcuda\.so" | sort -u | tr '\n' ' ')"
  du -b "$out/bin.tar.xz" "$out/rt.tar.xz"
} > "$out/MANIFEST"
cat "$out/MANIFEST"
du -sh "$out"
