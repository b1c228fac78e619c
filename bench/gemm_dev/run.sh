#!/usr/bin/env bash
# Builds and runs the GEMM development harness on the GPU machine (nvcc, cuBLAS, sm_90a):
#   bash bench/gemm_dev/run.sh            # all configurations, 4096^3 and 8192^3
#   QUICK=1 bash bench/gemm_dev/run.sh    # 4096^3 only
#   ONLY="sm90 f16" bash bench/gemm_dev/run.sh   # configurations whose name contains ONLY
# Each configuration runs in its own process under a timeout, so a fault or a hang in one
# cannot hide the results of the others. The table goes to stdout and to $OUT/gemm_dev.txt
# when OUT is set, with the full log, the ptxas report and the SASS instruction mix beside it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-/tmp/gemm_dev_out}"
mkdir -p "$out"
build="$(mktemp -d)"
NVCC="${NVCC:-nvcc}"
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
# PH_GEMM_WAIT_LIMIT: a pipeline wait that never completes traps (an error in seconds) rather
# than hanging until the timeout.
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I "$root/crates/phobos-cuda/cuda" -I "$here"
       -Xptxas -v -lineinfo -DPH_GEMM_WAIT_LIMIT=4000000)
t0=$(date +%s)
pids=()
for part in 0 1 2 3 4 5 6 7 -1; do
  "$NVCC" "${flags[@]}" -DPART=$part -c "$here/harness.cu" -o "$build/part$part.o" \
    >"$build/ptxas$part.log" 2>&1 &
  pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
cat "$build"/ptxas*.log >"$out/ptxas.log"
if [ "$fail" != 0 ]; then
  echo "BUILD FAILED"; grep -E "error|Error" "$out/ptxas.log" | head -40; exit 1
fi
"$NVCC" -gencode arch=compute_90a,code=sm_90a "$build"/part*.o -o "$build/harness" -lcublas -lcublasLt -lcuda \
  || { echo "LINK FAILED"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

# Registers, spills and stack per kernel, and the instruction mix of each kernel's SASS.
python3 "$here/table.py" ptxas "$out/ptxas.log" >"$out/ptxas_summary.txt" 2>&1 || true
CUOBJDUMP="$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)"
"$CUOBJDUMP" --dump-sass "$build/harness" >"$out/sass.txt" 2>/dev/null || true
python3 "$here/table.py" sass "$out/sass.txt" >"$out/sass_mix.txt" 2>&1 || true

log="$out/gemm_dev.log"
: >"$log"
big=--big
[ "${QUICK:-0}" = 1 ] && big=""
"$build/harness" --list >>"$log" 2>&1
timeout 240 "$build/harness" --base $big >>"$log" 2>&1 || echo "BASE_FAILED rc=$?" >>"$log"
n=$(grep -c '^CFG' "$log")
budget=${BUDGET_S:-420}  # stop starting configurations past this many seconds
for ((i = 0; i < n; i++)); do
  name=$(grep "^CFG $i |" "$log" | head -1)
  if [ -n "${ONLY:-}" ] && [[ "$name" != *"$ONLY"* ]]; then continue; fi
  if (( $(date +%s) - t0 > budget )); then echo "SKIP $i time budget" >>"$log"; continue; fi
  timeout 30 "$build/harness" --run "$i" $big >"$build/run$i.log" 2>&1
  rc=$?
  grep -v '^CFG' "$build/run$i.log" >>"$log"
  [ $rc != 0 ] && echo "EXIT $i rc=$rc $(tail -c 300 "$build/run$i.log" | tr '\n' ' ')" >>"$log"
done
python3 "$here/table.py" table "$log" "$out/ptxas_summary.txt" "$out/sass_mix.txt" | tee "$out/gemm_dev.txt"
echo "total: $(( $(date +%s) - t0 )) s"
rm -rf "$build"
