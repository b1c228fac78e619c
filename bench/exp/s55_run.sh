#!/usr/bin/env bash
# s55 on the GPU machine: every kernel cuBLAS launches for issue 15's two f16 GEMMs under 1.0x
# (3000x2000x1000, then 512x512x4096), its name (tile, cluster, split), grid, registers and
# counters beside the Phobos winner's (bench/profile.sh, ALL=1). Carry .gpu-bundle.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/s55}
mkdir -p "$out"
bash scripts/gpu-unpack.sh || exit 2
nvidia-smi -L >"$out/card.txt"
w3000="TILE_M=192 TILE_N=128 TILE_K=64 THREADS=416 STAGES=4 SPLIT_K=1 SCHEDULE=3 GROUP_M=8 SPLIT_REDUCE=1 CLUSTER=4 VEC_COPY=1"
w512="TILE_M=64 TILE_N=64 TILE_K=64 THREADS=160 STAGES=8 SPLIT_K=2 SCHEDULE=1 GROUP_M=1 SPLIT_REDUCE=4 CLUSTER=1 VEC_COPY=1"
ALL=1 DIMS=3000,2000,1000 POINTS="examples/gemm_small.ph|$w3000" OUT=$out/p3000 bash bench/profile.sh
ALL=1 DIMS=512,512,4096 POINTS="examples/gemm_small.ph|$w512" OUT=$out/p512 bash bench/profile.sh
