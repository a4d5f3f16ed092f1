# Sourced by the GPU-host scripts (gpu-checks.sh, faults-checks.sh): $here (the repository),
# $bin (binaries packed by pack.sh), $out (logs; $OUT or ./gpu-out), the packed runtime
# libraries unpacked and on LD_LIBRARY_PATH, and MPI allowed to run as root, oversubscribed.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${LATKE_GPU_BIN:-$here/.gpu/bin}
out=${OUT:-$here/gpu-out}
mkdir -p "$out" /tmp/rt
[ -f "$here/.gpu/rt.tar.xz" ] && tar -C /tmp/rt -xJf "$here/.gpu/rt.tar.xz"
# The pack's one copy of the library serves embed_in_petsc (which links liblatke.so.0) too.
if [ -e /tmp/rt/lib/liblatke_private.so.0 ] && [ ! -e /tmp/rt/lib/liblatke.so.0 ]; then
  ln -s liblatke_private.so.0 /tmp/rt/lib/liblatke.so.0
fi
export LD_LIBRARY_PATH=/tmp/rt/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
