#!/bin/sh
# A program keeps what it tuned: run the command given with LATKE_RESOURCE_PATH set to a fresh
# directory, then the tune cache there must hold entries whose key starts with KEY (the halo
# policies or kernels the autotuner chose; latke_tunecache.tsv, with its header).
# Usage: tune_cache_kept.sh KEY command [args...]
key=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
LATKE_RESOURCE_PATH=$dir "$@" > "$dir/out.log" 2>&1 || { cat "$dir/out.log"; echo "the program failed"; exit 1; }
file=$dir/latke_tunecache.tsv
[ -f "$file" ] || { echo "no tune cache written to $file"; exit 1; }
head -1 "$file" | grep -q '^latke-tunecache 1' || { echo "$file has no tune-cache header"; exit 1; }
grep -q "^$key" "$file" || { echo "$file holds no '$key' entry:"; cat "$file"; exit 1; }
echo "tune cache kept: $(grep -c "^$key" "$file") '$key' entries"
