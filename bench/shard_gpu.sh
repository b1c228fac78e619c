#!/usr/bin/env bash
# A tuning job split in two on the two-GPU machine, against the same job run whole, in one call
# that builds nothing (carry .gpu-bundle, made here by scripts/gpu-bundle.sh):
#
#   bash scripts/device-run.sh shards        (or: bash bench/shard_gpu.sh)
#
#   1. shards: `--shard 0/2` on GPU 0 and `--shard 1/2` on GPU 1 (CUDA_VISIBLE_DEVICES), two
#      processes at once, each with its own database and its own variant cache, as on two hosts;
#   2. merge: `phobos-kbench merge` of the two databases, then the unsharded command against the
#      merged store, once as is (it must measure nothing: merged.yaml) and once with
#      --final-round (the leaders of each problem re-timed on GPU 0: merged_final.yaml);
#   3. whole: the same job unsharded on GPU 0 from an empty database and a cold cache
#      (whole.yaml);
#   4. compare: --benchmark of merged_final.yaml and of whole.yaml on GPU 0, one after the
#      other, and per problem the two winners' configurations and TFLOP/s; they match when the
#      rates are within NOISE (default 0.03, 3%) of each other.
#
# The job: KERNEL (default examples/gemm_tuned.ph) on SIZES (bench/seed_sizes.yaml, seed 002's
# two problems) in DTYPE (bf16; empty: the kernel's types). SHARD_TUNE_S, WHOLE_TUNE_S and
# CHECK_S are the time boxes (all the boxes together fit one 600 s device call). KBENCH=path and BACKEND=interp run the same steps with another
# binary on the CPU interpreter (a rehearsal of the script without a GPU).
# Logs and files in $OUT (or target/shard-gpu); summary.txt last. Exit 0 when the merged store
# measured nothing again and every problem's winners match.
set -uo pipefail
cd "$(dirname "$0")/.."
kb=${KBENCH:-$(pwd -P)/.gpu-bundle/bin/phobos-kbench}
out=${OUT:-$(pwd -P)/target/shard-gpu}
kernel=${KERNEL:-examples/gemm_tuned.ph}
sizes=${SIZES:-bench/seed_sizes.yaml}
dt=${DTYPE-bf16}
noise=${NOISE:-0.03}
mkdir -p "$out"
[[ -x $kb ]] || { echo "bench/shard_gpu.sh: no $kb: run scripts/gpu-bundle.sh and carry .gpu-bundle" >&2; exit 2; }
export NO_COLOR=1
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_COUNT JOB_COMPLETION_INDEX
job=("$kernel" --sizes "$sizes" --backend "${BACKEND:-cuda}")
[[ -n $dt ]] && job+=(--dtype-a "$dt" --dtype-b "$dt" --dtype-c "$dt")
rc=0

# step NAME SECONDS GPU CMD...: one command on one GPU, time-boxed, logged to $out/NAME.log.
step() {
  local name=$1 cap=$2 gpu=$3 t0 r secs
  shift 3
  t0=$(date +%s.%N)
  echo "\$ CUDA_VISIBLE_DEVICES=$gpu phobos-kbench ${*:2}" >"$out/$name.log"
  CUDA_VISIBLE_DEVICES=$gpu timeout --kill-after=5 "$cap" "$@" >>"$out/$name.log" 2>&1
  r=$?
  secs=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  # A file, not an array: the shards' steps run in subshells.
  printf '%-16s exit %-3s %7ss\n' "$name" "$r" "$secs" >>"$out/steps.txt"
  echo "== $name: exit $r in ${secs}s"
  return "$r"
}

rm -rf "$out"/*.sqlite* "$out"/cache* "$out/steps.txt"
# 1. Two shards at once, one per GPU.
for i in 0 1; do
  XDG_CACHE_HOME=$out/cache_shard$i step "shard$i" "${SHARD_TUNE_S:-180}" "$i" \
    "$kb" "${job[@]}" --shard "$i/2" --db "$out/shard$i.sqlite" &
done
wait
for i in 0 1; do
  grep -q "^shard $i/2 (from --shard)" "$out/shard$i.log" || { echo "shard $i did not run" >&2; rc=1; }
done

# 2. The merge, the store read back as is, then the final round on one GPU.
export XDG_CACHE_HOME=$out/cache_merged
step merge 30 0 "$kb" merge "$out/merged.sqlite" "$out/shard0.sqlite" "$out/shard1.sqlite" || rc=1
step merged 45 0 "$kb" "${job[@]}" --db "$out/merged.sqlite" -o "$out/merged.yaml" || rc=1
if grep -q "^final round, interleaved" "$out/merged.log"; then
  echo "the unsharded run against the merged store measured points again" >&2
  rc=1
fi
step merged_final 75 0 "$kb" "${job[@]}" --db "$out/merged.sqlite" --final-round \
  -o "$out/merged_final.yaml" || rc=1

# 3. The whole job on one GPU, from nothing.
export XDG_CACHE_HOME=$out/cache_whole
step whole "${WHOLE_TUNE_S:-180}" 0 "$kb" "${job[@]}" --db "$out/whole.sqlite" -o "$out/whole.yaml" || rc=1

# 4. Both winners timed again on GPU 0, then compared.
bench=("$kb" "$kernel" --backend "${BACKEND:-cuda}" --benchmark)
step bench_merged "${CHECK_S:-40}" 0 "${bench[@]}" "$out/merged_final.yaml" || rc=1
step bench_whole "${CHECK_S:-40}" 0 "${bench[@]}" "$out/whole.yaml" || rc=1
python3 - "$out" "$noise" <<'PY' | tee "$out/compare.txt"
import ast, sys
out, noise = sys.argv[1], float(sys.argv[2])

def results(name):
    # A results file's lines are flow mappings in Python's literal syntax, then a comment.
    rows = {}
    for line in open(f"{out}/{name}"):
        if line.startswith("- {"):
            d = ast.literal_eval(line[2:].split("  #")[0])
            rows[(d["M"], d["N"], d["K"])] = d
    return rows

def bench(name):
    # `trans M N K TFLOPS Efficiency [cuBLAS]` rows of a --benchmark log.
    rates = {}
    for line in open(f"{out}/{name}"):
        f = line.split()
        if len(f) in (6, 7) and f[0].isalpha() and f[0].isupper() and f[1].isdigit():
            rates[(int(f[1]), int(f[2]), int(f[3]))] = float(f[4])
    return rates

merged, whole = results("merged_final.yaml"), results("whole.yaml")
rm, rw = bench("bench_merged.log"), bench("bench_whole.log")
ok = bool(whole)
for key in sorted(whole):
    cm = merged.get(key, {}).get("config")
    cw = whole[key].get("config")
    tm, tw = rm.get(key), rw.get(key)
    if tm is None or tw is None:
        verdict, ok = "no benchmark", False
    else:
        ratio = tm / tw
        same = abs(ratio - 1) <= noise
        ok = ok and same
        verdict = f"sharded/whole {ratio:.3f} ({'match' if same else 'DIFFER'}, noise {noise:.0%})"
    print(f"M={key[0]} N={key[1]} K={key[2]}: {verdict}")
    print(f"  sharded winner {cm}  {tm} TFLOP/s")
    print(f"  whole   winner {cw}  {tw} TFLOP/s")
print("winners match" if ok else "winners do not match")
sys.exit(0 if ok else 1)
PY
(( PIPESTATUS[0] == 0 )) || rc=1
rm -rf "$out"/cache*/phobos/variants

printf '\n== shards on two GPUs against one (logs in %s)\n' "$out"
{ cat "$out/steps.txt" "$out/compare.txt"; echo "exit $rc"; } | tee "$out/summary.txt"
exit "$rc"
