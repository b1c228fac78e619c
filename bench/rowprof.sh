#!/usr/bin/env bash
# Hardware counters of the row-wise kernels: Nsight Compute on one launch of each implementation
# of bench/rowwise.py (Phobos's tuned winner and the Triton kernel; torch's kernels have other
# names and are left out), for the cases named. Runs on the GPU machine and builds nothing: carry
# .gpu-bundle (scripts/gpu-bundle.sh).
#
#   OUT=dir bash bench/rowprof.sh          (or: bash scripts/device-run.sh rowprof)
#
# Environment: ONLY (rowwise.py --only, default rms_norm,layer_norm), DTYPE (default bf16),
# KERNELS (the kernel-name regex, default the ops' names), PINS and SHAPE (rowwise.py's --pins
# and --shape), SOURCE=1 (also the warp-state samples
# of every SASS instruction: $OUT/rowprof_sass.csv, Nsight Compute's source page, which
# bench/sassprof.py summarizes). Writes
# $OUT/rowprof.txt: per kernel, speed of light, memory workload, occupancy, launch statistics
# and warp states.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(pwd -P)/target/rowprof}
mkdir -p "$out"
only=${ONLY:-rms_norm,layer_norm}
dtype=${DTYPE:-bf16}
kernels=${KERNELS:-${only//,/|}}
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -n $ncu ]] || { echo "rowprof.sh: no ncu on this machine" >&2; exit 2; }
[[ -x .gpu-bundle/bin/phobos ]] || { echo "rowprof.sh: no .gpu-bundle/bin/phobos; run scripts/gpu-bundle.sh" >&2; exit 2; }
rm -f "$out/rowprof.ncu-rep"
source_section=() extra=()
[[ -n ${PINS:-} ]] && extra+=(--pins "$PINS")
[[ -n ${SHAPE:-} ]] && extra+=(--shape "$SHAPE")
[[ ${SOURCE:-0} == 1 ]] && source_section=(--section SourceCounters)
# application-only: phobos-kbench's tuning runs in child processes and is not profiled.
OUT=$out PHOBOS_BIN_DIR=$(pwd -P)/.gpu-bundle/bin "$ncu" --target-processes application-only \
  --clock-control none -k "regex:$kernels" \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats "${source_section[@]}" \
  -o "$out/rowprof" python3 -u bench/rowwise.py --only "$only" --dtype "$dtype" --quick --profile "${extra[@]}" \
  >"$out/rowwise_profile.log" 2>&1
r=$?
"$ncu" --import "$out/rowprof.ncu-rep" --page details >"$out/rowprof.txt" 2>&1 || r=1
tail -5 "$out/rowwise_profile.log" >>"$out/rowprof.txt"
if [[ ${SOURCE:-0} == 1 ]]; then
  "$ncu" --import "$out/rowprof.ncu-rep" --page source --print-source sass --csv \
    >"$out/rowprof_sass.csv" 2>&1 || r=1
fi
exit "$r"
