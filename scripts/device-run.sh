#!/usr/bin/env bash
# One call on the GPU machine (it builds nothing; carry .gpu-bundle, made by scripts/gpu-bundle.sh):
#
#   bash scripts/device-run.sh check seed gemm
#
# runs the parts named, in order, each into its own folder:
#   check  scripts/gpu-check.sh   every GPU test and `phobos run --compare` on every example
#   seed   bench/seed_runs.sh     the seeds' tuning runs (ONLY=... as that script documents)
#   gemm   bench/gemm.sh          the GEMM benchmark table against cuBLAS and Triton
#   profile bench/profile.sh      hardware counters of the GEMM winners and of cuBLAS
#   stalls bench/stalls.sh        where the warps of a GEMM winner and of cuBLAS wait, per instruction
#   rowwise bench/rowwise.py      softmax, norms, cross-entropy, transpose: Phobos tuned, torch,
#                                 Triton and a copy of the same bytes (ROWWISE_ARGS: its flags)
#   attention bench/attention.py  attention forward: Phobos tuned against torch's SDPA (ATTENTION_ARGS)
#   rowprof bench/rowprof.sh      Nsight Compute counters of the row-wise kernels (Phobos, Triton)
#   shards bench/shard_gpu.sh     two shards on two GPUs, merged, against the job run whole (nvidia-h200-x2)
#   spaces bench/record_spaces.sh exhaustive runs of spaces of over 1000 points as replay datasets
#                                 (PARTS=...): spaces.tgz (the .jsonl files for bench/spaces/) and
#                                 spaces.txt (the summary and the replay table)
# Beside them, clocks.csv: every GPU's SM clock, power draw, temperature and clock-event
# reasons four times a second for the whole call (nvidia-smi), to read the numbers against.
# The device returns at most 8 files from $OUT, so the logs are packed into $OUT/logs.tgz and
# each part's summary is copied beside it (check.txt, seed.txt, gemm.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/gpu-unpack.sh || { echo "device-run: could not unpack .gpu-bundle/payload.tar.xz" >&2; exit 2; }
final=${OUT:-$(pwd -P)/target/device-run}
work=$(mktemp -d)
mkdir -p "$final"
rc=0
fields=index,timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$fields --format=csv,noheader -c 1 >/dev/null 2>&1 ||
  fields=index,timestamp,clocks.sm,power.draw,temperature.gpu
echo "$fields" >"$work/clocks.csv"
nvidia-smi --query-gpu=$fields --format=csv,noheader -lms 250 >>"$work/clocks.csv" 2>&1 &
smi=$!
for part in "$@"; do
  mkdir -p "$work/$part"
  case $part in
    check) OUT=$work/check bash scripts/gpu-check.sh; r=$?; cp "$work/check/summary.txt" "$final/check.txt" ;;
    seed) OUT=$work/seed bash bench/seed_runs.sh; r=$?; cp "$work/seed/summary.txt" "$final/seed.txt" ;;
    gemm) OUT=$work/gemm bash bench/gemm.sh; r=$?; cp "$work/gemm/gemm_table.txt" "$final/gemm.txt" ;;
    profile) OUT=$work/profile bash bench/profile.sh; r=$?; cp "$work/profile/profile.txt" "$final/profile.txt" ;;
    stalls) OUT=$work/stalls bash bench/stalls.sh; r=$?; cp "$work/stalls/stalls.txt" "$final/stalls.txt" ;;
    rowwise)
      # shellcheck disable=SC2086
      OUT=$work/rowwise PHOBOS_BIN_DIR=$(pwd -P)/.gpu-bundle/bin python3 -u bench/rowwise.py ${ROWWISE_ARGS:-} \
        2>&1 | tee "$work/rowwise/rowwise.txt"
      r=${PIPESTATUS[0]}
      cp "$work/rowwise/rowwise.txt" "$final/rowwise.txt" ;;
    attention)
      # shellcheck disable=SC2086
      OUT=$work/attention PHOBOS_BIN_DIR=$(pwd -P)/.gpu-bundle/bin python3 -u bench/attention.py ${ATTENTION_ARGS:-} \
        2>&1 | tee "$work/attention/attention.txt"
      r=${PIPESTATUS[0]}
      cp "$work/attention/attention.txt" "$final/attention.txt" ;;
    rowprof) OUT=$work/rowprof bash bench/rowprof.sh; r=$?; cp "$work/rowprof/rowprof.txt" "$final/rowprof.txt" ;;
    shards) OUT=$work/shards bash bench/shard_gpu.sh; r=$?; cp "$work/shards/summary.txt" "$final/shards.txt" ;;
    spaces)
      OUT=$work/spaces bash bench/record_spaces.sh; r=$?
      cp "$work/spaces/summary.txt" "$final/spaces.txt" 2>/dev/null
      cat "$work/spaces/replay.txt" >>"$final/spaces.txt" 2>/dev/null
      (cd "$work/spaces" && tar czf "$final/spaces.tgz" ./*.jsonl replay.json 2>/dev/null) ;;
    *) echo "device-run: unknown part $part (check, seed, gemm, profile, stalls, rowwise, attention, rowprof, shards, spaces)" >&2; r=2 ;;
  esac
  ((r == 0)) || rc=$r
  # Packed after every part, so a call stopped at its limit still brings back what ran.
  tar czf "$final/logs.tgz" --exclude='*.bin' --exclude='*.ncu-rep' -C "$work" .
done
kill "$smi" 2>/dev/null
tar czf "$final/logs.tgz" --exclude='*.bin' --exclude='*.ncu-rep' -C "$work" .
ls -la "$final"
exit "$rc"
