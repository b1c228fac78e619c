#!/usr/bin/env bash
# Where the warps of one GEMM launch wait, instruction by instruction: Nsight Compute's warp-state
# sampling of one Phobos point and of cuBLAS (through torch) on the same problem, summed per SASS
# instruction and per opcode. Runs on the GPU machine and builds nothing: carry .gpu-bundle
# (scripts/gpu-bundle.sh).
#
#   OUT=dir bash bench/stalls.sh            (or: bash scripts/device-run.sh stalls)
#
# Environment: DTYPE=fp16 (fp16, bf16, fp32), SIZE=4096 (M = N = K), POINTS (`;`-separated
# "file|pins" pairs, default the winner of bench/NOTES.md v8 (fp32: v9) for the dtype), DIMS=M,N,K
# (the problem of the points and of cuBLAS, default M = N = K = SIZE). For other kernels: DIMS
# as the points' `--dims` (NAME=INTEGER pairs), TYPES (their
# `--types`), ARGS (more flags for `phobos run`, e.g. "--arg scale=0.125"), KREGEX (the kernel
# names to sample, default GEMM-like names) and BASELINE (Python that runs the library's kernel,
# default cuBLAS through torch; bench/sdpa_launch.py for attention). Writes
# $OUT/stalls.txt (per kernel: the stall reasons, the opcodes and the 25 instructions with the
# most samples) and, per kernel, the report (`*.ncu-rep`) and its SASS page as CSV.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-target/stalls}
mkdir -p "$out"
dtype=${DTYPE:-fp16}
size=${SIZE:-4096}
# fp32: exact FFMA on both sides (sgemm takes no type arguments; torch without TF32).
types=()
case $dtype in
  fp16) types=(--types "TA=f16,TB=f16,TC=f16") torch_t=float16 ;;
  bf16) types=(--types "TA=bf16,TB=bf16,TC=bf16") torch_t=bfloat16 ;;
  fp32) torch_t=float32 ;;
  *) echo "stalls.sh: DTYPE is fp16, bf16 or fp32" >&2; exit 2 ;;
esac
default_points="examples/gemm_persistent.ph|STAGES=4 SCHEDULE=2 CLUSTER=1"
[[ $dtype == fp32 ]] && default_points="examples/sgemm.ph|TILE_M=128 TILE_N=256 TILE_K=16 GROUP_M=8 MIN_BLOCKS=1"
points=${POINTS:-$default_points}
# DIMS: M,N,K (as bench/profile.sh takes it: the points' M, N, K and cuBLAS's problem) or the
# points' own `--dims` (NAME=INTEGER pairs, for kernels other than GEMMs).
dims=${DIMS:-$size,$size,$size}
m=$size n=$size k=$size
if [[ $dims =~ ^([0-9]+),([0-9]+),([0-9]+)$ ]]; then
  m=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} k=${BASH_REMATCH[3]}
  dims="M=$m,N=$n,K=$k"
elif [[ $dims != *=* ]]; then
  echo "stalls.sh: DIMS is M,N,K or NAME=INTEGER pairs, not \"$dims\"" >&2
  exit 2
fi
kregex=${KREGEX:-"(gemm|nvjet|xmma|cutlass|sm90)"}
[[ -n ${TYPES:-} ]] && types=(--types "$TYPES")
bin=.gpu-bundle/bin
[[ -x $bin/phobos ]] || { echo "stalls.sh: no $bin/phobos; run scripts/gpu-bundle.sh" >&2; exit 2; }
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -n $ncu ]] || { echo "stalls.sh: no ncu on this machine" >&2; exit 2; }

sample() {  # name, command...
  local name=$1
  shift
  # The last launch whose name looks like a GEMM (torch makes its inputs first): profile them
  # all and keep the report; the summary reads the last.
  "$ncu" --clock-control none --section WarpStateStats --section SourceCounters \
    -k "regex:$kregex" -f -o "$out/$name" "$@" >"$out/ncu_$name.log" 2>&1
  echo "$name exit $?" >>"$out/progress.txt"
  "$ncu" -i "$out/$name.ncu-rep" --page details --section WarpStateStats --csv \
    >"$out/$name.details.csv" 2>>"$out/ncu_$name.log"
  "$ncu" -i "$out/$name.ncu-rep" --page source --print-source sass --csv \
    >"$out/$name.sass.csv" 2>>"$out/ncu_$name.log"
}

i=0
IFS=';' read -ra list <<<"$points"
for p in "${list[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  sample "phobos$i" "$bin/phobos" run "${p%%|*}" --dims "$dims" \
    "${types[@]}" ${ARGS:-} --autotune "${p#*|}"
  echo "phobos$i ${p%%|*} ${p#*|}" >>"$out/points.txt"
done
baseline=${BASELINE:-"
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn($m, $k, device='cuda').to(torch.$torch_t)
b = torch.randn($k, $n, device='cuda').to(a.dtype)
for _ in range(3): c = a @ b
torch.cuda.synchronize()
"}
sample cublas python3 -c "$baseline"
python3 bench/stalls_summary.py "$out" | tee "$out/stalls.txt"
