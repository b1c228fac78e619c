#!/usr/bin/env bash
# bench/NOTES.md r36 and r36b on the GPU machine: the emitted bf16 softmax_row and cross-entropy winners
# with an L2 prefetch of the row PF_D ahead (bench/exp/gen/*.cu, written by hand from `phobos
# emit`), timed by bench/exp/srow.cu and bench/exp/lse.cu, two passes, L2 flushed and not.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-/tmp/pf}
mkdir -p "$B"
NV="nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda -Ibench/exp"
runs=()
declare -A ROWS=()
[[ -f ${ROWS_FILE-} ]] && source "$ROWS_FILE"
# WIDTHS: the row widths timed (50257 alone by default).
# SROW: the softmax_row files (bench/exp/gen/srow_<at>.cu) and distances; XENT: the cross-entropy's.
for v in ${SROW-start:0 start:132 start:264 start:396 store:132 store:264 store:396}; do
  at=${v%:*} d=${v#*:}
  # The launch from the file's `// launch: T threads, S bytes ...` line.
  read -r t sm < <(sed -n '1s/^\/\/ launch: \([0-9]*\) threads, \([0-9]*\) bytes.*/\1 \2/p' "bench/exp/gen/srow_$at.cu")
  cx=$(sed -n 's/.*__cluster_dims__(\([0-9]*\), 1, 1).*/\1/p' "bench/exp/gen/srow_$at.cu" | head -1)
  $NV -DKERNEL_FILE="\"gen/srow_$at.cu\"" -Dsoftmax_row=kern -DTHREADS_N=$t -DSMEM_N=$sm -DCLUSTER_X=${cx:-1} -DPF_D=$d bench/exp/srow.cu -o "$B/srow_${at}_$d" &
  # ROWS: the rows and width a file runs at, "M N" (2048 rows of each of WIDTHS by default).
  if [[ -n ${ROWS[$at]-} ]]; then runs+=("srow_${at}_$d ${ROWS[$at]}"); continue; fi
  for n in ${WIDTHS-50257}; do runs+=("srow_${at}_$d 2048 $n"); done
done
# XENT: the cross-entropy's files (bench/exp/gen/xent_<at>.cu) and distances, `at:d` (a bare d:
# xent_start).
for v in ${XENT-0 264 396}; do
  [[ $v == *:* ]] || v="start:$v"
  at=${v%:*} d=${v#*:}
  read -r t sm < <(sed -n '1s/^\/\/ launch: \([0-9]*\) threads, \([0-9]*\) bytes.*/\1 \2/p' "bench/exp/gen/xent_$at.cu")
  $NV -DKERNEL_FILE="\"gen/xent_$at.cu\"" -Dcross_entropy=kern -DTHREADS_N=$t -DSMEM_N=$sm -DPF_D=$d bench/exp/lse.cu -o "$B/xent_${at}_$d" &
  for n in ${WIDTHS-50257}; do runs+=("xent_${at}_$d 4096 $n"); done
done
wait
for pass in 1 2; do
  for flush in 1 0; do
    for r in "${runs[@]}"; do
      set -- $r
      echo "== pass $pass $1 FLUSH=$flush"
      FLUSH=$flush "$B/$1" "$2" "$3" | tail -1 || true  # r36b's variants fail the check
    done
  done
done
