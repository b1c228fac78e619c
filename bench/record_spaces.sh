#!/usr/bin/env bash
# Exhaustive runs of spaces of more than a thousand points on the GPU, recorded as datasets
# for `phobos-kbench replay` (bench/spaces/*.jsonl; docs/tuner.md has the table). One call on
# the GPU machine that builds nothing (carry .gpu-bundle, made by scripts/gpu-bundle.sh):
#
#   bash scripts/device-run.sh spaces                 # every part, about 9 minutes in all
#   PARTS="gemm_f16_a softmax" bash scripts/device-run.sh spaces
#
# (device-run.sh brings back spaces.tgz, the datasets, and spaces.txt, the summary and the
# replay table; run alone, this script leaves everything in $OUT.)
#
# Parts (each its own database and dataset, time-boxed; a part stopped by its box is said so
# in the summary, and its dataset is not an exhaustive run):
#   gemm_{f16,bf16}_{a,b}  bench/spaces/gemm_space.ph (1152 points) at 1024^3 (a) and
#                          2048 x 512 x 1024 (b); b reuses a's compiled variants
#   attention              bench/spaces/attention_space.ph (1280 points), BH=16, N=1024
#   softmax                bench/spaces/softmax_space.ph (1600 points), 4096 x 1000
# Per point the work is small: small problems, --budget-ms 2. Datasets, databases and logs go
# to $OUT (or target/record-spaces); copy the .jsonl files into bench/spaces/. At the end every
# dataset is replayed (random, anneal, model; 10 seeds each) into replay.txt, the table of
# docs/tuner.md.
set -uo pipefail
cd "$(dirname "$0")/.."
kb=$(pwd -P)/.gpu-bundle/bin/phobos-kbench
out=${OUT:-$(pwd -P)/target/record-spaces}
mkdir -p "$out"
parts=${PARTS:-gemm_f16_a gemm_f16_b gemm_bf16_a gemm_bf16_b attention softmax}
[[ -x $kb ]] || { echo "bench/record_spaces.sh: no $kb: run scripts/gpu-bundle.sh and carry .gpu-bundle" >&2; exit 2; }
export NO_COLOR=1
export XDG_CACHE_HOME=$out/cache
rm -rf "$XDG_CACHE_HOME"
summary=()

# part NAME SECONDS KERNEL FLAGS...: an exhaustive run into NAME.sqlite, then its dataset.
part() {
  local name=$1 cap=$2 kernel=$3 t0 rc secs
  shift 3
  [[ " $parts " == *" $name "* ]] || return 0
  rm -f "$out/$name.sqlite"*
  t0=$(date +%s.%N)
  timeout --kill-after=5 "$cap" "$kb" "$kernel" --db "$out/$name.sqlite" --budget-ms 2 "$@" \
    >"$out/$name.log" 2>&1
  rc=$?
  secs=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  "$kb" record --db "$out/$name.sqlite" --kernel "$kernel" -o "$out/$name.jsonl" >>"$out/$name.log" 2>&1
  local n
  n=$(grep -c '"kind":"point"' "$out/$name.jsonl" 2>/dev/null || echo 0)
  local note=""
  [[ $rc == 124 || $rc == 137 ]] && note="  STOPPED BY ITS ${cap}s BOX: not exhaustive"
  summary+=("$(printf '%-14s exit %-3s %7ss %5s points%s' "$name" "$rc" "$secs" "$n" "$note")")
  echo "== $name: exit $rc in ${secs}s, $n points$note"
}

gemm=bench/spaces/gemm_space.ph
for dt in f16 bf16; do
  types=(--dtype-a "$dt" --dtype-b "$dt" --dtype-c "$dt")
  part "gemm_${dt}_a" "${GEMM_A_S:-115}" "$gemm" -m 1024 -n 1024 -k 1024 "${types[@]}"
  part "gemm_${dt}_b" "${GEMM_B_S:-55}" "$gemm" -m 2048 -n 512 -k 1024 "${types[@]}"
done
part attention "${ATTENTION_S:-110}" bench/spaces/attention_space.ph --dims BH=16,N=1024 --arg scale=0.125
part softmax "${SOFTMAX_S:-80}" bench/spaces/softmax_space.ph --dims M=4096,N=1000
rm -rf "$XDG_CACHE_HOME/phobos/variants"

data=()
for f in "$out"/*.jsonl; do [[ -s $f ]] && data+=(--data "$f"); done
if (( ${#data[@]} )); then
  "$kb" replay "${data[@]}" --strategy random,anneal,model --seeds 10 | tee "$out/replay.txt"
  "$kb" replay "${data[@]}" --strategy random,anneal,model --seeds 10 --json >"$out/replay.json"
fi
printf '\n== record spaces (datasets and logs in %s)\n' "$out"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
