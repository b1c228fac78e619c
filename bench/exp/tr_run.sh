#!/usr/bin/env bash
# bench/NOTES.md r37 on the GPU machine: emitted transposes (bench/exp/gen/tr_*.cu, from
# bench/exp/pf_gen.sh) timed by bench/exp/tr.cu at the shapes of RUNS ("file TILE_R TILE_C M N").
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-/tmp/tr}
mkdir -p "$B"
NV="nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda"
declare -A built=()
# A file name "f@D" is f.cu compiled with -DTR_D=D (bench/exp/tr_hook.cuh).
while read -r f tr tc m n; do
  [[ -z $f || -n ${built[$f]-} ]] && continue
  built[$f]=1
  src=${f%@*} d=0
  [[ $f == *@* ]] && d=${f#*@}
  read -r t sm < <(sed -n '1s/^\/\/ launch: \([0-9]*\) threads, \([0-9]*\) bytes.*/\1 \2/p' "bench/exp/gen/$src.cu")
  $NV -Ibench/exp -DKERNEL_FILE="\"gen/$src.cu\"" -Dtranspose=kern -DTHREADS_N=$t -DSMEM_N=$sm -DTILE_R=$tr -DTILE_C=$tc -DTR_D=$d bench/exp/tr.cu -o "$B/$f" &
done <<<"$RUNS"
wait
for pass in 1 2; do
  while read -r f tr tc m n; do
    [[ -z $f ]] && continue
    "$B/$f" "$m" "$n" | tail -1 || true
  done <<<"$RUNS"
done
