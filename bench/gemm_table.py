#!/usr/bin/env python3
"""The table of bench/gemm.sh, from the files it leaves in OUT:

    python3 bench/gemm_table.py OUT fp32 tf32 fp16 bf16 fp8

Per dtype and problem: Phobos tuned (the winner timed again by `phobos-kbench --benchmark`),
cuBLAS timed in that same process (cuBLASLt for fp8), their ratio; cuBLAS through torch and the
autotuned Triton matmul (bench/baselines.py, same run, same problems) and Phobos / Triton; the
winner's configuration and SASS mix. A missing number is `-`, never guessed.
"""
import json
import os
import re
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main():
    out, dtypes = sys.argv[1], sys.argv[2:]
    base = {}
    for line in read(os.path.join(out, "baselines.log")).splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        base[(r["dtype"], r["M"], r["N"], r["K"])] = r
    tune_s = dict(l.split() for l in read(os.path.join(out, "tune_seconds.txt")).splitlines() if l)
    fmt = lambda x, d=1: "-" if x is None else f"{x:.{d}f}"
    ratio = lambda a, b: None if a is None or not b else a / b
    head = (f"{'dtype':<5} {'M x N x K':<16} {'Phobos':>8} {'cuBLAS':>8} {'ratio':>6} "
            f"{'torch':>8} {'Triton':>8} {'/Triton':>7}  winner; SASS")
    print("TFLOP/s on one GPU, same run; Phobos and cuBLAS from `phobos-kbench --benchmark`,")
    print("torch (cuBLAS) and Triton (autotuned) from bench/baselines.py\n")
    print(head)
    print("-" * len(head))
    for dt in dtypes:
        bench = {}
        for line in read(os.path.join(out, f"benchmark_{dt}.txt")).splitlines():
            m = re.match(r"\s*(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", line)
            if m and m.group(1) != "trans":
                num = lambda s: None if s == "-" else float(s)
                bench[tuple(int(m.group(i)) for i in (2, 3, 4))] = (num(m.group(5)), num(m.group(7)))
        sass = {}
        for line in read(os.path.join(out, f"sass_{dt}.txt")).splitlines():
            cfg, _, mix = line.partition(" ")
            sass[cfg] = mix
        configs = re.findall(r"# (M=(\d+)_N=(\d+)_K=(\d+)\S*)", read(os.path.join(out, f"{dt}.yaml")))
        winners = {(int(m), int(n), int(k)): c for c, m, n, k in configs}
        keys = sorted(set(bench) | set(winners), key=lambda t: (t[0] * t[1] * t[2], t))
        if not keys:
            print(f"{dt:<5} (no result: see tune_{dt}.log)")
        for mnk in keys:
            ph, cb = bench.get(mnk, (None, None))
            b = base.get((dt, *mnk), {})
            tr = b.get("triton_tflops")
            cfg = winners.get(mnk, "-")
            short = re.sub(r"^M=\d+_N=\d+_K=\d+_", "", cfg)
            print(f"{dt:<5} {'x'.join(map(str, mnk)):<16} {fmt(ph):>8} {fmt(cb):>8} "
                  f"{fmt(ratio(ph, cb), 3):>6} {fmt(b.get('cublas_tflops')):>8} {fmt(tr):>8} "
                  f"{fmt(ratio(ph, tr), 3):>7}  {short}; {sass.get(cfg, '-')}")
        if dt in tune_s:
            print(f"{'':<5} tuning all {len(winners)} problems took {tune_s[dt]} s "
                  f"(compile, check, time)")
    print("\nratio = Phobos / cuBLAS (same process); /Triton = Phobos / Triton")


if __name__ == "__main__":
    main()
