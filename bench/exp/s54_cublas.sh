#!/usr/bin/env bash
# Every kernel cuBLAS (through torch) launches for one f16 GEMM, and the Phobos winner's, with
# their times and L2 bytes under Nsight Compute (the device; carry .gpu-bundle):
#   OUT=dir bash bench/exp/s54_cublas.sh "512,512,4096|pins" "3000,2000,1000|pins"
set -uo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu-unpack.sh >/dev/null || exit 2
out=${OUT:-target/s54}
mkdir -p "$out"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size,\
launch__cluster_dim_x,launch__cluster_dim_y,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for spec in "$@"; do
  dims=${spec%%|*}
  pins=${spec#*|}
  IFS=, read -r m n k <<<"$dims"
  tag=${m}x${n}x${k}
  "$ncu" --clock-control none --metrics "$metrics" --csv --page raw python3 -c "
import torch
a = torch.randn($m, $k, device='cuda').half()
b = torch.randn($k, $n, device='cuda').half()
torch.cuda.synchronize()
for _ in range(2): c = a @ b
torch.cuda.synchronize()
" >"$out/cublas_$tag.csv" 2>&1
  "$ncu" --clock-control none --metrics "$metrics" --csv --page raw .gpu-bundle/bin/phobos run examples/gemm_small.ph \
    --dims "M=$m,N=$n,K=$k" --types "TA=f16,TB=f16,TC=f16" --autotune "$pins" >"$out/phobos_$tag.csv" 2>&1
done
python3 - "$out" <<'PY'
import csv, glob, os, sys
cols = ["gpu__time_duration.sum", "lts__t_bytes.sum", "dram__bytes_read.sum", "launch__grid_size", "launch__block_size",
        "launch__cluster_dim_x", "launch__cluster_dim_y", "launch__registers_per_thread",
        "launch__shared_mem_per_block_dynamic", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
for path in sorted(glob.glob(f"{sys.argv[1]}/*.csv")):
    rows = list(csv.reader(l for l in open(path) if l.startswith('"')))
    print(f"== {os.path.basename(path)}")
    if len(rows) < 3:
        print("   no kernels"); continue
    head = rows[0]
    for d in rows[2:]:
        g = lambda c: d[head.index(c)] if c in head else "?"
        name = g("Kernel Name")[:70]
        if "elementwise" in name or "distribution" in name or "copy" in name.lower() and "gemm" not in name:
            continue
        print(f"   {name:<70} " + " ".join(f"{g(c):>10}" for c in cols))
PY
