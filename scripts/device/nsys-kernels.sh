#!/usr/bin/env bash
# Runs one command under Nsight Systems (CUDA and NVTX traces) on a GPU host and writes, under
# $out/NAME: the report (NAME.nsys-rep), the kernel and CUDA API summaries
# (NAME_cuda_gpu_kern_sum.csv, NAME_cuda_api_sum.csv), the GPU trace (NAME_cuda_gpu_trace.csv:
# every kernel and copy with its start and duration, for launch gaps and waits), and from
# Latke's NVTX ranges (its log events) the ranges' times and the kernels under each
# (NAME_nvtx_sum.csv, NAME_nvtx_kern_sum.csv). Prints the 25 kernels of most total time.
# Usage: nsys-kernels.sh NAME command [args...]   (binaries as packed by pack.sh: use $bin)
# Under mpirun each rank writes its own, NAME.rankR.
source "$(dirname "$0")/host-env.sh"
name=$1
shift
[ -n "${OMPI_COMM_WORLD_RANK:-}" ] && name=$name.rank$OMPI_COMM_WORLD_RANK
# Nsight Systems where it is installed; else the collector that Nsight Compute bundles (the
# lent GPU hosts have only that one): it records but cannot import, so the raw .qdstrm file is
# kept, to import with a full Nsight Systems (nsys import, or open it in nsys-ui) elsewhere.
nsys=$(command -v nsys || ls -d /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
  /usr/local/cuda*/nsight-systems*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
  /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2> /dev/null | head -1)
[ -x "$nsys" ] || { echo "nsys-kernels.sh: no nsys on this host" >&2; exit 2; }
mkdir -p "$out/$name"
"$nsys" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true \
  -o "$out/$name/$name" "$@" > "$out/$name/run.log" 2>&1
status=$?
if [ ! -f "$out/$name/$name.nsys-rep" ]; then
  echo "nsys-kernels.sh: $nsys recorded $(ls "$out/$name"/*.qdstrm 2> /dev/null) but could not import it" \
    "(no Nsight Systems importer here): no summaries" >&2
  exit $((status ? status : 3))
fi
for r in cuda_gpu_kern_sum cuda_api_sum cuda_gpu_trace nvtx_sum nvtx_kern_sum; do
  "$nsys" stats --force-export=true --report $r --format csv --output "$out/$name/$name" \
    "$out/$name/$name.nsys-rep" > /dev/null 2>&1
done
for f in "$out/$name/${name}"_cuda_gpu_kern_sum*.csv; do
  [ -f "$f" ] && python3 - "$f" << 'PY'
import csv, sys, re
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:25]:
    name = re.sub(r"\s+", " ", r.get("Name", ""))[:150]
    print("%6s%%  %10.1f us total  %7s calls  %8.2f us avg  %s" % (r.get("Time (%)"), float(r["Total Time (ns)"]) / 1e3,
          r["Instances"], float(r["Avg (ns)"]) / 1e3, name))
PY
done
exit $status
