#!/usr/bin/env bash
# The tuning runs the seeds describe, end to end on the GPU machine, in one call that builds
# nothing (carry .gpu-bundle, made here by scripts/gpu-bundle.sh):
#
#   1. seed 000: examples/gemm.ph (27 points) at M=N=K=4096, and examples/partial_sums.ph
#      (U = 1, 2, 4, 8) at N = 2^26, each tuned from a cold variant cache and an empty database
#      (--report), then once more to show the stored results being reused;
#   2. seed 002: its two sizes (bench/seed_sizes.yaml: 4864x4096x8192 and 8192^3, A row-major,
#      B column-major) tuned on examples/gemm_tuned.ph in bf16 and fp16 with -o, then --check
#      and --benchmark on the written file;
#   3. with GPUS=0,1 (the two-GPU machine): the bf16 tuning of step 2 with --gpus 0,1.
#
# Wall times are measured around each command. Logs in $OUT (or target/seed-runs); a summary
# is printed last. ONLY="000" or ONLY="002" or ONLY="gpus" runs one part; SEED_DTYPES="bf16"
# runs step 2 for one element type; SEED_TUNE_S and SEED_CHECK_S are its time boxes, GPUS_TUNE_S
# step 3's.
set -uo pipefail
cd "$(dirname "$0")/.."
kb=$(pwd -P)/.gpu-bundle/bin/phobos-kbench
out=${OUT:-$(pwd -P)/target/seed-runs}
mkdir -p "$out"
only=${ONLY:-000 002}
[[ -x $kb ]] || { echo "bench/seed_runs.sh: no $kb: run scripts/gpu-bundle.sh and carry .gpu-bundle" >&2; exit 2; }
export NO_COLOR=1
summary=()

# run NAME SECONDS CMD...: runs with a time box, logs to $out/NAME.log, records the wall time.
run() {
  local name=$1 cap=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  echo "\$ phobos-kbench ${*:2}" >"$out/$name.log"
  timeout --kill-after=5 "$cap" "$@" >>"$out/$name.log" 2>&1
  rc=$?
  local secs
  secs=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  summary+=("$(printf '%-28s exit %-3s %7ss' "$name" "$rc" "$secs")")
  echo "== $name: exit $rc in ${secs}s"
}

if [[ $only == *000* ]]; then
  export XDG_CACHE_HOME=$out/cache000
  rm -rf "$XDG_CACHE_HOME"
  run gemm_4096_cold 120 "$kb" examples/gemm.ph -m 4096 -n 4096 -k 4096 --report
  run gemm_4096_reuse 30 "$kb" examples/gemm.ph -m 4096 -n 4096 -k 4096 --report
  run partial_sums_2e26_cold 60 "$kb" examples/partial_sums.ph --dims N=67108864 --report
  run partial_sums_2e26_reuse 30 "$kb" examples/partial_sums.ph --dims N=67108864 --report
  rm -rf "$XDG_CACHE_HOME/phobos/variants"
fi

if [[ $only == *002* ]]; then
  export XDG_CACHE_HOME=$out/cache002
  rm -rf "$XDG_CACHE_HOME"
  for dt in ${SEED_DTYPES:-bf16 fp16}; do
    types=(--dtype-a "$dt" --dtype-b "$dt" --dtype-c "$dt")
    run "seed002_${dt}_tune" "${SEED_TUNE_S:-100}" "$kb" examples/gemm_tuned.ph --sizes bench/seed_sizes.yaml \
      "${types[@]}" -o "$out/seed002_$dt.yaml"
    run "seed002_${dt}_check" "${SEED_CHECK_S:-30}" "$kb" examples/gemm_tuned.ph --check "$out/seed002_$dt.yaml"
    run "seed002_${dt}_benchmark" "${SEED_CHECK_S:-30}" "$kb" examples/gemm_tuned.ph --benchmark "$out/seed002_$dt.yaml"
  done
  rm -rf "$XDG_CACHE_HOME/phobos/variants"
fi

if [[ $only == *gpus* ]]; then
  export XDG_CACHE_HOME=$out/cache_gpus
  rm -rf "$XDG_CACHE_HOME"
  run seed002_bf16_gpus01 "${GPUS_TUNE_S:-300}" "$kb" examples/gemm_tuned.ph --sizes bench/seed_sizes.yaml \
    --dtype-a bf16 --dtype-b bf16 --dtype-c bf16 --gpus 0,1 --report -o "$out/seed002_gpus.yaml"
  rm -rf "$XDG_CACHE_HOME/phobos/variants"
fi

printf '\n== seed runs (logs in %s)\n' "$out"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
