#!/usr/bin/env bash
# bench/NOTES.md v28 on the GPU machine: the copies alone of the 3000x2000x1000 GEMM's tiles
# (bench/exp/multicast.cu's `gemm` modes, 128-byte L2 promotion as the GEMM's maps) in 128x192
# and 192x128 tiles, with A shared by pairs (`a-halves`) and both operands shared in 2x2
# clusters (`quad`), against the aligned 3072x2048x1024.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-/tmp/mc}
mkdir -p "$B"
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda bench/exp/multicast.cu -lcuda -o "$B/mc"
for pass in 1 2; do
  for tile in 128x192 192x128; do
    for mnk in "3000 2000 1000" "3072 2048 1024"; do
      echo "== pass $pass TILE=$tile $mnk"
      TILE=$tile PROMOTION=2 "$B/mc" gemm $mnk 4 0
    done
  done
done
