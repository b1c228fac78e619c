#!/usr/bin/env bash
# The GEMM benchmark, on the GPU machine, in one call that builds nothing:
#
#   here:  scripts/gpu-bundle.sh        (release binaries into .gpu-bundle/)
#   there: bash bench/gemm.sh           (carry .gpu-bundle)
#
# For each dtype (fp32 on examples/sgemm.ph, tf32 on examples/gemm_fast.ph, fp16, bf16 and fp8
# e4m3 on examples/gemm_persistent.ph: its producer warp, persistent schedule and clusters)
# and each problem of bench/gemm_sizes.yaml (4096^3, 8192^3, 4864x4096x8192):
#   1. phobos-kbench tunes the kernel (-o <dtype>.yaml: the best configuration per problem);
#   2. phobos-kbench --benchmark <dtype>.yaml times each winner again with cuBLAS (cuBLASLt for
#      fp8) side by side, in the same process;
#   3. each winner is compiled alone (--config, into an empty variant cache) and its SASS
#      instruction mix read with cuobjdump (tensor-core ops, FFMA, local-memory traffic);
# then bench/baselines.py times cuBLAS through torch and the autotuned Triton matmul on the same
# problems, and bench/gemm_table.py prints one table of ratios (Phobos / cuBLAS, Phobos / Triton).
#
# Two more dtypes run f16 operands on examples/gemm_small.ph (SMALL_KERNEL), whose space reaches
# problems that 128x256 tiles do not fill or that are not aligned (bench/gemm_sizes_odd.yaml):
# fp16s with an f16 C (SPLIT_K through an f32 workspace), fp16s32 with an f32 C (SPLIT_K with
# atomics into C); cuBLAS gets the same C.
#
# Environment: ONLY="fp16 bf16" (dtypes), SIZES=bench/gemm_sizes.yaml, NO_TRITON=1, FAST_KERNEL
# (the kernel of every tensor-core dtype, instead of the defaults above), SGEMM_KERNEL (fp32's),
# EXTRA_ARGS (added to every tuning command, e.g. "--autotune TILE_N=256"), and
# BENCH_BUDGET (seconds, default 540) that every step is time-boxed against, TRITON_RESERVE
# (seconds of it kept for the baselines, default 150).
# Output in $OUT (or target/bench-gemm): gemm_table.txt, plus the logs it is made from.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
kb=$repo/.gpu-bundle/bin/phobos-kbench
out=${OUT:-$repo/target/bench-gemm}
mkdir -p "$out"
sizes=${SIZES:-bench/gemm_sizes.yaml}
dtypes=(${ONLY:-fp32 tf32 fp16 bf16 fp8})
budget=${BENCH_BUDGET:-540}
start=$(date +%s)
[[ -x $kb ]] || { echo "bench/gemm.sh: no $kb: run scripts/gpu-bundle.sh and carry .gpu-bundle" >&2; exit 2; }

# Seconds left for a step: at most `cap`, keeping `reserve` for what follows.
left() {
  local cap=$1 reserve=${2:-0} rest
  rest=$((budget - ($(date +%s) - start) - reserve))
  ((rest < cap)) && cap=$rest
  ((cap < 5)) && cap=5
  echo "$cap"
}

# The tensor-core kernels. gemm_fast's tile space holds tf32's winner (128x128x32); the 16-bit
# and fp8 winners are 128x256 tiles, where gemm_persistent's schedules gain 2-4 % (NOTES.md v7).
wide=${FAST_KERNEL:-examples/gemm_persistent.ph}
fast=${FAST_KERNEL:-examples/gemm_fast.ph}
small=${SMALL_KERNEL:-examples/gemm_small.ph}

# dtype -> kernel file and kbench flags (A, B, C element types; layouts).
flags_of() {
  case $1 in
    fp32) echo "${SGEMM_KERNEL:-examples/sgemm.ph}" ;;
    # TILE_K pinned to one 128-byte swizzle line of the type (gemm_fast declares 64, for 16-bit).
    tf32) echo "$fast --dtype-a tf32 --dtype-b tf32 --dtype-c fp32 --col-b --autotune TILE_K=32" ;;
    fp16) echo "$wide --dtype-a fp16 --dtype-b fp16 --dtype-c fp16" ;;
    bf16) echo "$wide --dtype-a bf16 --dtype-b bf16 --dtype-c bf16" ;;
    fp8) echo "$wide --dtype-a fp8 --dtype-b fp8 --dtype-c bf16 --col-b --autotune TILE_K=128" ;;
    fp16s) echo "$small --dtype-a fp16 --dtype-b fp16 --dtype-c fp16" ;;
    fp16s32) echo "$small --dtype-a fp16 --dtype-b fp16 --dtype-c fp32" ;;
    *) echo "" ;;
  esac
}

# The sizes with B column-major, for the dtypes that pass --col-b: an entry's own rowMajorB
# wins over the flag.
sizes_col_b=$out/sizes_col_b.yaml
sed "s/'rowMajorB': 'T'/'rowMajorB': 'N'/" "$sizes" >"$sizes_col_b"

export XDG_CACHE_HOME=$out/cache NO_COLOR=1 PATH=$PATH:/usr/local/cuda/bin
db=$out/cache/bench.sqlite
mkdir -p "$out/cache"
{
  echo "== $(date -u) on $(hostname)"
  timeout 20 nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv
} >"$out/env.txt" 2>&1

# Triton autotunes while nothing else runs on the GPU, after Phobos; start with Phobos.
n_dtypes=${#dtypes[@]}
for i in "${!dtypes[@]}"; do
  dt=${dtypes[$i]}
  f=$(flags_of "$dt")
  [[ -n $f ]] || { echo "bench/gemm.sh: unknown dtype $dt" >&2; continue; }
  read -r -a flags <<<"$f"
  dt_sizes=$sizes
  [[ " ${flags[*]} " == *" --col-b "* ]] && dt_sizes=$sizes_col_b
  # An equal share of what is left for this dtype (tuning, the benchmark and the SASS runs),
  # keeping TRITON_RESERVE seconds (default 150) for Triton and the table.
  share=$(( ($(left 9999 "${TRITON_RESERVE:-150}")) / (n_dtypes - i) ))
  t0=$(date +%s)
  echo "== $dt: tune ($((share * 7 / 10))s at most)" | tee -a "$out/progress.txt"
  # shellcheck disable=SC2086 # EXTRA_ARGS: more kbench words, e.g. "--autotune TILE_N=256"
  timeout --kill-after=5 "$((share * 7 / 10))" "$kb" "${flags[@]}" ${EXTRA_ARGS:-} --sizes "$dt_sizes" --db "$db" \
    --retune --budget-ms "${BUDGET_MS:-50}" --report -o "$out/$dt.yaml" >"$out/tune_$dt.log" 2>&1
  echo "   exit $? after $(($(date +%s) - t0))s" | tee -a "$out/progress.txt"
  echo "$dt $(($(date +%s) - t0))" >>"$out/tune_seconds.txt"
  [[ -s $out/$dt.yaml ]] || continue
  # At least 60 s: the benchmark makes each problem's inputs, times Phobos and cuBLAS in
  # alternating rounds and measures the peak once.
  bench_s=$((share * 20 / 100 > 60 ? share * 20 / 100 : 60))
  timeout --kill-after=5 "$bench_s" "$kb" "${flags[0]}" --benchmark "$out/$dt.yaml" \
    --db "$db" >"$out/benchmark_$dt.txt" 2>&1
  echo "   benchmark exit $?" | tee -a "$out/progress.txt"
  # The SASS of each winner: its config string is the comment after the entry.
  : >"$out/sass_$dt.txt"
  grep -o '# M=.*' "$out/$dt.yaml" | sed 's/^# //' | while read -r cfg; do
    tmp=$(mktemp -d)
    XDG_CACHE_HOME=$tmp timeout "$((share * 3 / 100 + 2))" "$kb" "${flags[0]}" --config "$cfg" --db "$tmp/db.sqlite" \
      >"$tmp/log" 2>&1
    bin=$(ls "$tmp"/phobos/variants/*.bin 2>/dev/null | head -1)
    if [[ -n $bin ]] && cuobjdump -sass "$bin" >"$tmp/sass" 2>/dev/null; then
      mix=$(python3 - "$tmp/sass" <<'PY'
import re, sys
ops = {}
for line in open(sys.argv[1]):
    m = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
    if m:
        ops[m.group(1)] = ops.get(m.group(1), 0) + 1
keys = ["HGMMA", "QGMMA", "HMMA", "FFMA", "LDSM", "UTMALDG", "LDGSTS", "LDL", "STL"]
print(" ".join(f"{k}={ops.get(k, 0)}" for k in keys if ops.get(k) or k in ("LDL", "STL")))
PY
)
      echo "$cfg $mix" >>"$out/sass_$dt.txt"
    else
      echo "$cfg no-sass ($(tail -1 "$tmp/log"))" >>"$out/sass_$dt.txt"
    fi
    rm -rf "$tmp"
  done
done

# cuBLAS through torch and the autotuned Triton matmul, on the same problems.
size_list=$(python3 -c '
import re, sys
s = open(sys.argv[1]).read()
print(",".join("x".join(t) for t in re.findall(r"M.: (\d+), .N.: (\d+), .K.: (\d+)", s)))' "$sizes")
base_dtypes=$(IFS=,; echo "${dtypes[*]}")
triton_flag=()
[[ -n ${NO_TRITON:-} ]] && triton_flag=(--no-triton)
timeout --kill-after=5 "$(left 400 10)" python3 bench/baselines.py --sizes "$size_list" \
  --dtypes "$base_dtypes" --col-b tf32,fp8 --json "$out/baselines.json" "${triton_flag[@]}" \
  >"$out/baselines.log" 2>&1
echo "== baselines exit $?" | tee -a "$out/progress.txt"

python3 bench/gemm_table.py "$out" "${dtypes[@]}" | tee "$out/gemm_table.txt"
rm -rf "$out/cache/phobos/variants"
echo "bench/gemm.sh: $(($(date +%s) - start))s"
