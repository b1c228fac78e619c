#!/usr/bin/env bash
# bench/NOTES.md r51 on the GPU machine: the emitted bf16 transpose winner (bench/exp/gen/tr16_gen.cu,
# `phobos emit` of transpose.ph at TILE_R=256 TILE_C=64 THREADS=1024 STORE_LINES=1) against the
# hand-written 16-bit one (bench/exp/tr16_pairs.cu), timed by bench/exp/tr.cu (2-byte elements) at M x N
# (SHAPES, default 8191x8193; M odd: tr16_pairs.cu does not handle an even M), two passes.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-/tmp/tr16}
mkdir -p "$B"
NV="nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda -Ibench/exp"
# Made by bench/exp/pf_gen.sh (carry bench/exp/gen).
files="gen/tr16_gen tr16_pairs"
for f in $files; do
  read -r t sm < <(sed -n '1s/^\/\/ launch: \([0-9]*\) threads, \([0-9]*\) bytes.*/\1 \2/p' "bench/exp/$f.cu")
  $NV -DKERNEL_FILE="\"$f.cu\"" -Dtranspose=kern -DTHREADS_N="$t" -DSMEM_N="$sm" -DTILE_R=256 -DTILE_C=64 \
    -DELEM="unsigned short" -DKELEM=ph::bf16 bench/exp/tr.cu -o "$B/${f#gen/}" &
done
wait
for s in ${SHAPES:-8191x8193}; do
  (( ${s%x*} % 2 == 1 )) || { echo "tr16_run: $s: M must be odd" >&2; exit 2; }
done
for pass in 1 2; do
  for s in ${SHAPES:-8191x8193}; do
    for f in $files; do "$B/${f#gen/}" "${s%x*}" "${s#*x}" | tail -1 || true; done
  done
done
