#!/usr/bin/env bash
# One call on the GPU machine (it builds nothing; carry .gpu-bundle, made by scripts/gpu-bundle.sh):
#
#   bash scripts/device-run.sh check seed gemm
#
# runs the parts named, in order, each into its own folder:
#   check  scripts/gpu-check.sh   every GPU test and `phobos run --compare` on every example
#   seed   bench/seed_runs.sh     the seeds' tuning runs (ONLY=... as that script documents)
#   gemm   bench/gemm.sh          the GEMM benchmark table against cuBLAS and Triton
# The device returns at most 8 files from $OUT, so the logs are packed into $OUT/logs.tgz and
# each part's summary is copied beside it (check.txt, seed.txt, gemm.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
final=${OUT:-$(pwd -P)/target/device-run}
work=$(mktemp -d)
mkdir -p "$final"
rc=0
for part in "$@"; do
  mkdir -p "$work/$part"
  case $part in
    check) OUT=$work/check bash scripts/gpu-check.sh; r=$?; cp "$work/check/summary.txt" "$final/check.txt" ;;
    seed) OUT=$work/seed bash bench/seed_runs.sh; r=$?; cp "$work/seed/summary.txt" "$final/seed.txt" ;;
    gemm) OUT=$work/gemm bash bench/gemm.sh; r=$?; cp "$work/gemm/gemm_table.txt" "$final/gemm.txt" ;;
    *) echo "device-run: unknown part $part (check, seed, gemm)" >&2; r=2 ;;
  esac
  ((r == 0)) || rc=$r
  # Packed after every part, so a call stopped at its limit still brings back what ran.
  tar czf "$final/logs.tgz" --exclude='*.bin' -C "$work" .
done
ls -la "$final"
exit "$rc"
