#!/usr/bin/env bash
# Hardware counters of one Phobos GEMM launch and of cuBLAS (through torch) on the same problem,
# side by side: where the time of the winner goes, against the library's. Runs on the GPU
# machine (Nsight Compute must read the counters there; it leaves the clocks alone) and builds
# nothing: carry .gpu-bundle (scripts/gpu-bundle.sh).
#
#   OUT=dir bash bench/profile.sh
#
# Environment: DTYPE=fp16 (fp16, bf16), SIZE=4096 (M = N = K) or DIMS=M,N,K, POINTS (`;`-separated
# "file|pins" pairs, default the f16 winners of bench/NOTES.md), ALL=1 (every kernel cuBLAS
# launches, a split-K reduction's included, each a row, not only the last GEMM-named one; torch's
# input kernels left out). Writes $OUT/profile.txt (the table) and $OUT/ncu_*.txt (every counter
# read, per kernel).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-target/profile}
mkdir -p "$out"
dtype=${DTYPE:-fp16}
size=${SIZE:-4096}
IFS=, read -r m n k <<<"${DIMS:-$size,$size,$size}"
case $dtype in
  fp16) ph=f16 ;;
  bf16) ph=bf16 ;;
  *) echo "profile.sh: DTYPE is fp16 or bf16" >&2; exit 2 ;;
esac
points=${POINTS:-"examples/gemm_fast.ph|TILE_M=128 TILE_N=256 TILE_K=64 STAGES=4 GROUP_M=8;examples/gemm_persistent.ph|STAGES=4 SCHEDULE=1;examples/gemm_persistent.ph|STAGES=4 SCHEDULE=2"}
bin=.gpu-bundle/bin
[[ -x $bin/phobos ]] || { echo "profile.sh: no $bin/phobos; run scripts/gpu-bundle.sh" >&2; exit 2; }
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -n $ncu ]] || { echo "profile.sh: no ncu on this machine" >&2; exit 2; }

# What each column reads: time, clock, tensor-pipe activity, issue activity, L2 bytes and L2
# throughput (% of its peak: near 100, the kernel is bound by L2 bandwidth), DRAM bytes.
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed.avg.per_cycle_active,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,\
dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,\
launch__cluster_dim_x,launch__cluster_dim_y,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio

gemm_names="(gemm|nvjet|xmma|cutlass|sm90)"
profile() {  # name, kernel-name regex, command...
  local name=$1 kernels=$2
  shift 2
  "$ncu" --clock-control none --metrics "$metrics" -k "regex:$kernels" \
    --csv --page raw "$@" >"$out/ncu_$name.txt" 2>&1
  echo "$name exit $?" >>"$out/progress.txt"
}

i=0
IFS=';' read -ra list <<<"$points"
for p in "${list[@]}"; do
  file=${p%%|*}
  pins=${p#*|}
  i=$((i + 1))
  profile "phobos$i" "$gemm_names" "$bin/phobos" run "$file" --dims "M=$m,N=$n,K=$k" \
    --types "TA=$ph,TB=$ph,TC=$ph" --autotune "$pins"
  echo "phobos$i $file $pins" >>"$out/points.txt"
done
# The GEMM is the last launch whose name looks like one (torch makes its inputs first); ALL=1:
# every launch (the table leaves torch's input kernels out).
cublas_kernels=$gemm_names
[[ ${ALL:-0} == 1 ]] && cublas_kernels=.
profile cublas "$cublas_kernels" python3 -c "
import torch
a = torch.randn($m, $k, device='cuda').to(torch.$( [[ $dtype == fp16 ]] && echo float16 || echo bfloat16 ))
b = torch.randn($k, $n, device='cuda').to(a.dtype)
for _ in range(3): c = a @ b
torch.cuda.synchronize()
"
python3 - "$out" "$m" "$n" "$k" "${ALL:-0}" <<'EOF' | tee "$out/profile.txt"
import csv, glob, os, sys
out, m, n, k, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
cols = [("gpu__time_duration.sum", "us", 1e-3), ("sm__cycles_elapsed.avg.per_second", "MHz", 1e-6),
        ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor%", 1),
        ("sm__inst_executed.avg.per_cycle_active", "IPC", 1), ("lts__t_bytes.sum", "L2 MB", 1e-6),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 %", 1),
        ("dram__bytes_read.sum", "DRAM rd MB", 1e-6), ("dram__bytes_write.sum", "DRAM wr MB", 1e-6),
        ("launch__grid_size", "grid", 1), ("launch__registers_per_thread", "regs", 1),
        ("launch__cluster_dim_x", "clX", 1), ("launch__cluster_dim_y", "clY", 1)]
points = {}
if os.path.exists(f"{out}/points.txt"):
    for line in open(f"{out}/points.txt"):
        run, rest = line.split(" ", 1)
        points[run] = rest.strip()
print(f"{'run':<9}{'kernel':<44}" + "".join(f"{h:>11}" for _, h, _ in cols) + f"{'TFLOP/s':>9}")
def row(name, head, data):
    get = lambda metric: data[head.index(metric)] if metric in head else ""
    cells = []
    for metric, _, scale in cols:
        v = get(metric).replace(",", "")
        try:
            cells.append(f"{float(v) * scale:>11.1f}")
        except ValueError:
            cells.append(f"{v:>11}")
    try:
        tf = 2 * m * n * k / (float(get("gpu__time_duration.sum").replace(",", "")) * 1e-9) / 1e12
    except ValueError:
        tf = float("nan")
    print(f"{name:<9}{get('Kernel Name')[:43]:<44}" + "".join(cells) + f"{tf:>9.1f}")
for path in sorted(glob.glob(f"{out}/ncu_*.txt")):
    name = os.path.basename(path)[4:-4]
    lines = [l for l in open(path) if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print(f"{name:<9}no kernel profiled (see {os.path.basename(path)})")
        continue
    head, launches = rows[0], [rows[-1]]  # rows[1] holds the units; the last launch is the GEMM
    if every and name == "cublas":
        # Every kernel of the last of the three products; torch's input kernels left out.
        at = head.index("Kernel Name")
        ours = [r for r in rows[2:] if not any(w in r[at] for w in ("elementwise", "distribution"))]
        launches = ours[len(ours) - len(ours) // 3:]
    for data in launches:
        row(name, head, data)
for run, pins in points.items():
    print(f"  {run}: {pins}")
EOF
