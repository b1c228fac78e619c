#!/usr/bin/env bash
# Every GPU check, on the GPU machine, in one call that builds nothing:
#
#   here:  scripts/gpu-bundle.sh          (release binaries and GPU test binaries)
#   there: bash scripts/gpu-check.sh      (carry .gpu-bundle; run from anywhere)
#
# 1. the device, driver and CUDA libraries (env.txt);
# 2. every bundled test binary with `--ignored --test-threads=1` (tests.log);
# 3. `phobos run --compare` on every example at its default point on a ragged shape
#    (compare.log);
# 4. a summary table, printed last and kept in summary.txt: per test binary passed, failed and
#    ignored, and per example the verdict of --compare.
#
# Logs go to $OUT (the folder that comes back from the GPU machine: at most 8 files), else to
# target/gpu-check/. Each step is time-boxed and the whole run stays under GPU_CHECK_BUDGET seconds
# (default 480), so one hang cannot eat the call; GPU_CHECK_SKIP names tests to leave out,
# GPU_CHECK_ONLY the test binaries to run (space-separated, e.g. "gpu_diff masks"; the --compare
# step then runs only when it names `compare`). Exit status: 0 when everything passed.
#
# The tests were built elsewhere: paths compiled into them (the repository, CARGO_BIN_EXE_*)
# are recreated here as symbolic links when they do not exist, and PHOBOS_ROOT / PHOBOS_BIN
# point the tests that honour them at this checkout and the bundle.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
bundle=$repo/.gpu-bundle
out=${OUT:-$repo/target/gpu-check}
mkdir -p "$out"
budget=${GPU_CHECK_BUDGET:-480}
start=$(date +%s)
summary=()
failed_any=0

bash "$repo/scripts/gpu-unpack.sh" || { echo "gpu-check: could not unpack $bundle/payload.tar.xz" >&2; exit 2; }
if [[ ! -x $bundle/bin/phobos ]] || ! ls "$bundle"/tests/* >/dev/null 2>&1; then
  echo "gpu-check: no bundle at $bundle: run scripts/gpu-bundle.sh first and carry .gpu-bundle" >&2
  exit 2
fi

# Seconds left for a step: at most `cap`, and never past the budget (less a reserve for the
# steps after it).
left() {
  local cap=$1 reserve=${2:-0} now rest
  now=$(date +%s)
  rest=$((budget - (now - start) - reserve))
  ((rest < cap)) && cap=$rest
  ((cap < 1)) && cap=1
  echo "$cap"
}

# --- 1. the machine --------------------------------------------------------------------------
{
  echo "== $(date -u) on $(hostname)"
  timeout 30 nvidia-smi 2>&1 || echo "nvidia-smi failed or is missing"
  echo "== CUDA libraries"
  for lib in libcuda.so.1 libnvrtc.so.13 libcublas.so.13 libcublasLt.so.13; do
    found=$(ldconfig -p 2>/dev/null | grep -m1 "$lib" | sed 's/.*=> //')
    [[ -z $found ]] && found=$(ls /usr/local/cuda/lib64/"$lib" 2>/dev/null)
    echo "$lib: ${found:-not found on the loader path or in /usr/local/cuda/lib64}"
  done
  ls -d /usr/local/cuda/include/cuda_fp16.h 2>/dev/null || echo "cuda_fp16.h: not in /usr/local/cuda/include"
} >"$out/env.txt" 2>&1

# --- paths compiled into the tests ---------------------------------------------------------
built_root=$(cat "$bundle/root" 2>/dev/null)
target_dir=$(cat "$bundle/target_dir" 2>/dev/null)
{
  echo "== paths: repository here $repo, built at ${built_root:-?}, target ${target_dir:-?}"
  if [[ -n $built_root && $built_root != "$repo" && ! -e $built_root ]]; then
    mkdir -p "$(dirname "$built_root")" && ln -s "$repo" "$built_root" &&
      echo "linked $built_root -> $repo"
  fi
  if [[ -n $target_dir ]]; then
    mkdir -p "$target_dir/release" 2>/dev/null
    for b in "$bundle"/bin/*; do
      dst=$target_dir/release/$(basename "$b")
      [[ -e $dst ]] || { ln -s "$b" "$dst" && echo "linked $dst -> $b"; }
    done
  fi
} >>"$out/env.txt" 2>&1
export PHOBOS_ROOT=$repo PHOBOS_BIN=$bundle/bin/phobos NO_COLOR=1 RUST_BACKTRACE=1

# --- 2. the test binaries --------------------------------------------------------------------
# gpu_diff compiles a hundred kernels one after the other: it runs last, with what is left.
tests=()
for t in "$bundle"/tests/*; do [[ $t == *gpu_diff* ]] || tests+=("$t"); done
for t in "$bundle"/tests/*; do [[ $t == *gpu_diff* ]] && tests+=("$t"); done
if [[ -n ${GPU_CHECK_ONLY:-} ]]; then
  kept=()
  for t in "${tests[@]}"; do
    [[ " $GPU_CHECK_ONLY " == *" $(basename "$t") "* ]] && kept+=("$t")
  done
  tests=("${kept[@]}")
fi
# Tests that need two GPUs are left out on a machine with fewer, and the summary says so.
# CUDA_VISIBLE_DEVICES, when set, says how many of them a program here sees.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [[ -n ${CUDA_VISIBLE_DEVICES+x} ]]; then
  visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
  ((visible < gpus)) && gpus=$visible
fi
# GPU_CHECK_SKIP: test names (space-separated) to leave out, e.g. those a cut-short call
# already ran.
skip=()
for s in ${GPU_CHECK_SKIP:-}; do skip+=(--skip "$s"); done
if ((gpus < 2)); then
  skip+=(--skip two_gpus_share_one_search)
  summary+=("$(printf '%-44s %s' "two_gpus_share_one_search" "NOT RUN: $gpus GPU(s) here, it needs 2")")
fi
# The examples' --compare step (about 10 s a kernel at most) runs before gpu_diff.
compare_reserve=90
# The test binaries keep 120 s after them for gpu_diff; a budget that leaves them less than two
# minutes more would time them out for want of time, not for a fault: say so up front.
min_budget=$((compare_reserve + 120 + 120))
# What the test binaries leave for the --compare step and gpu_diff; a smaller budget shrinks it
# in proportion, so that the first binaries do not get a few seconds each.
rest_reserve=$((compare_reserve + 120))
if ((budget < min_budget)); then
  rest_reserve=$((rest_reserve * budget / min_budget))
  note="GPU_CHECK_BUDGET=$budget is under the $min_budget s the steps need: expect TIMEOUT verdicts"
  echo "gpu-check: $note" >&2
  summary+=("$note")
fi
: >"$out/tests.log"
run_tests() {
  local t=$1 cap=$2 name rc secs passed failed ignored
  name=$(basename "$t")
  local s0
  s0=$(date +%s)
  echo "===== $name (time box ${cap}s)" >>"$out/tests.log"
  # gpu_diff runs its cases in one test and names each as it passes (stderr): uncaptured, so
  # that a time box that stops it still shows how far it got.
  local show=()
  [[ $name == *gpu_diff* ]] && show=(--nocapture)
  (cd "$repo" && timeout --kill-after=10 "$cap" "$t" --ignored --test-threads=1 "${show[@]}" "${skip[@]}") \
    >>"$out/tests.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - s0))
  # Counted from the per-test lines, so that a binary stopped by its time box still shows
  # what ran (the test that hung has no verdict); an uncaptured test's verdict ends a line of
  # its own.
  read -r passed failed ignored < <(sed -n "/^===== $name /,\$p" "$out/tests.log" |
    awk '/^test .* \.\.\. ok$/ || /^ok$/ {p++} /^test .* \.\.\. FAILED$/ || /^FAILED$/ {f++} /^test .* \.\.\. ignored/ {i++}
         END {print p+0, f+0, i+0}')
  local verdict=ok
  if ((rc == 124 || rc == 137)); then
    verdict="TIMEOUT ${cap}s"
  elif ((rc != 0)); then
    verdict="FAILED (exit $rc)"
  fi
  [[ $verdict == ok ]] || failed_any=1
  echo "===== $name: exit $rc after ${secs}s" >>"$out/tests.log"
  summary+=("$(printf '%-44s %6s %6s %7s  %s (%ss)' "$name" "$passed" "$failed" "$ignored" "$verdict" "$secs")")
}
for t in "${tests[@]}"; do
  if [[ $t == *gpu_diff* ]]; then
    continue
  fi
  run_tests "$t" "$(left 180 "$rest_reserve")"
done

# --- 3. phobos run --compare on every example --------------------------------------------------
# The same ragged dims and scalars as crates/phobos-cli/tests/run_gpu.rs (EXAMPLES).
examples=(
  "activations.ph N=1000"
  "attention_lse.ph BH=3,N=45 --arg scale=0.125"
  "cross_entropy.ph M=7,V=5003"
  "dropout.ph N=1000 --arg p=0.25 --arg seed=7"
  "flash_attention.ph BH=3,N=45 --arg scale=0.125"
  "flash_attention_d128.ph BH=2,N=45 --arg scale=0.125"
  "gemm.ph M=77,N=45,K=67"
  "gemm_fast.ph M=77,N=45,K=67"
  "gemm_persistent.ph M=77,N=45,K=67"
  "gemm_small.ph M=77,N=45,K=67"
  "gemm_tuned.ph M=77,N=65,K=192"
  "gemm_typed.ph M=77,N=45,K=72"
  "histogram.ph N=1000,BINS=7"
  "layer_norm.ph M=7,N=300 --arg eps=0.00001"
  "layer_norm_backward.ph M=7,N=200"
  "layer_norm_tiles.ph M=7,N=200 --arg eps=0.00001"
  "matmul_leaky_relu.ph M=77,N=45,K=67"
  "partial_sums.ph N=1000"
  "rms_norm.ph M=7,N=301 --arg eps=0.000001"
  "row_stats.ph M=7,N=45"
  "saxpy.ph N=1000 --arg a=0.5"
  "sgemm.ph M=77,N=45,K=67"
  "softmax.ph M=7,N=45"
  "softmax_online.ph M=5,N=3001"
  "softmax_row.ph M=5,N=3001"
  "transpose.ph M=77,N=45"
)
: >"$out/compare.log"
compare_rows=()
for f in "$repo"/examples/*.ph; do
  [[ -n ${GPU_CHECK_ONLY:-} && " $GPU_CHECK_ONLY " != *" compare "* ]] && break
  base=$(basename "$f")
  spec=""
  for e in "${examples[@]}"; do [[ $e == "$base "* ]] && spec=$e; done
  if [[ -z $spec ]]; then
    compare_rows+=("$(printf '%-44s %s' "run --compare $base" "NO DIMS (add it to gpu-check.sh)")")
    failed_any=1
    continue
  fi
  read -r -a words <<<"$spec"
  echo "===== phobos run --compare examples/${words[*]}" >>"$out/compare.log"
  timeout --kill-after=5 "$(left 60 30)" "$bundle/bin/phobos" run "examples/$base" --dims "${words[1]}" \
    "${words[@]:2}" --compare >>"$out/compare.log" 2>&1
  rc=$?
  n_pass=$(sed -n "/^===== phobos run --compare examples\/$base /,\$p" "$out/compare.log" | grep -c ': pass$')
  case $rc in
    0) verdict="ok ($n_pass outputs pass)" ;;
    124 | 137) verdict="TIMEOUT" ;;
    *) verdict="FAILED (exit $rc)" ;;
  esac
  [[ $rc == 0 ]] || failed_any=1
  echo "===== exit $rc" >>"$out/compare.log"
  compare_rows+=("$(printf '%-44s %s' "run --compare $base" "$verdict")")
done

# --- gpu_diff last, with the time that is left -------------------------------------------------
for t in "${tests[@]}"; do
  [[ $t == *gpu_diff* ]] && run_tests "$t" "$(left 600 5)"
done

# A file over 16 MiB does not come back: keep the head and the tail of a long log.
for f in "$out/tests.log" "$out/compare.log"; do
  if (($(stat -c %s "$f") > 15 * 1024 * 1024)); then
    { head -c 7M "$f"; printf '\n... cut ...\n'; tail -c 7M "$f"; } >"$f.cut" && mv "$f.cut" "$f"
  fi
done

# --- 4. summary --------------------------------------------------------------------------------
{
  echo
  echo "== gpu-check summary ($(($(date +%s) - start))s; logs: env.txt tests.log compare.log)"
  printf '%-44s %6s %6s %7s  %s\n' "test binary" passed failed ignored verdict
  printf '%s\n' "${summary[@]}"
  echo
  printf '%s\n' "${compare_rows[@]}"
  echo
  if ((failed_any)); then echo "RESULT: FAILURES (see above)"; else echo "RESULT: all passed"; fi
} | tee "$out/summary.txt"
# The failing tests' own lines, for a quick look without the logs.
grep -E '^test .* FAILED$|^---- |panicked at' "$out/tests.log" | head -40 >"$out/failures.txt"
exit "$failed_any"
