#!/usr/bin/env python3
"""Attention forward: Phobos tuned against torch's scaled_dot_product_attention, in one process.

    python3 bench/attention.py [--quick] [--json out.json]

For every case (batch-heads, tokens, head dim 64 or 128, causal or not, f16 or bf16):
phobos-kbench tunes the case's example (flash_attention.ph and attention_lse.ph at head dim 64
in f16, flash_attention_d128.ph at 128 in either type, `--types T=..`) for that problem (its own process, the results database under $OUT),
then this process loads the winner's PTX through the CUDA driver (bench/rowwise.py's loader) and
times it beside torch's SDPA (its fastest backend on the machine) with `triton.testing.do_bench`
(CUDA events, L2 flushed, median). Phobos's output is first checked against SDPA's on the same
random inputs, with the output poisoned before the launch. TFLOP/s count 4·BH·N²·D (halved for
causal), the same for both columns, so the ratio compares times.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rowwise as rw  # noqa: E402  (the driver loader, kbench and emit wrappers)

OUT = os.environ.get("OUT", os.path.join(rw.ROOT, "target", "attention"))
rw.OUT = OUT


def make(bh, n, d, causal, dtype="f16", seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    t = rw.DT[dtype]
    q, k, v = (torch.randn(bh, n, d, device="cuda", generator=g, dtype=t) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    return q, k, v, o


def sdpa(q, k, v, causal):
    return F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=bool(causal))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only-d128", action="store_true", help="only the head-dim-128 cases")
    ap.add_argument("--json", default=os.path.join(OUT, "attention.json"))
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "attention.log")
    # (batch-heads, tokens, head dim, causal, example, dtype): attention_lse.ph also writes the
    # row log-sum-exp and runs its online softmax in base 2 (exp2).
    fa, d128 = "flash_attention.ph", "flash_attention_d128.ph"
    cases = [(32, 4096, 64, 0, fa, "f16"), (64, 4096, 64, 0, fa, "f16"),
             (64, 4096, 64, 1, fa, "f16"), (16, 8192, 64, 0, fa, "f16"),
             (32, 4096, 64, 0, "attention_lse.ph", "f16"), (64, 4096, 64, 1, "attention_lse.ph", "f16"),
             (32, 4096, 128, 0, d128, "f16"), (32, 4096, 128, 1, d128, "f16"),
             (32, 4096, 128, 0, d128, "bf16"), (32, 4096, 128, 1, d128, "bf16")]
    if a.only_d128:
        cases = [c for c in cases if c[4] == d128]
    if a.quick:
        cases = cases[:1]
    drv = rw.Driver()
    rows = []
    for bh, n, d, causal, file, dtype in cases:
        t0 = time.time()
        row = dict(kernel=file.removesuffix(".ph"), bh=bh, n=n, d=d, causal=causal, dtype=dtype)
        flops = 4 * bh * n * n * d / (2 if causal else 1)
        try:
            q, k, v, o = make(bh, n, d, causal, dtype)
            scale = 1 / math.sqrt(d)
            ref = sdpa(q, k, v, causal).float()
            row["torch"] = rw.bench(lambda: sdpa(q, k, v, causal))
            case = dict(name="attention", file=file, dims=f"BH={bh},N={n}",
                        args=[f"scale={scale}"], budget=60)
            # Pinned either way: attention_lse.ph declares both, and a causal winner would
            # answer a different question.
            case["pins"] = f"CAUSAL={causal}"
            if file == d128:
                case["types"] = f"T={dtype}"
            pins, row["kbench_ms"] = tune_pinned(case, log)
            row["pins"] = pins
            if pins:
                ptx, kname, params, threads, smem = rw.emit(case, pins, log)
                fn = drv.load(ptx, kname, smem)
                p = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in pins.split()}
                grid = (math.ceil(n / p["BR"]), bh, 1)
                lse = torch.full((bh, n), float("nan"), device="cuda")
                tensors = dict(Q=q, K=k, V=v, O=o, L=lse, scale=scale, BH=bh, N=n)
                args = [tensors[x] for x in params]
                launch = lambda: drv.launch(fn, grid, threads, smem, args)
                launch()
                torch.cuda.synchronize()
                row["phobos_err"] = rw.rel_err(o.float(), ref.double())
                if "L" in params:
                    # The log-sum-exp of the first two heads' scaled scores.
                    s = (q[:2].float() @ k[:2].float().transpose(1, 2)) * scale
                    if causal:
                        s = s.masked_fill(torch.ones(n, n, device="cuda").triu(1).bool(), float("-inf"))
                    row["phobos_err"] = max(row["phobos_err"], rw.rel_err(lse[:2], torch.logsumexp(s, -1).double()))
                # bf16 keeps 8 bits of mantissa: its outputs round 8x coarser than f16's.
                tol = 3e-2 if dtype == "bf16" else 1e-2
                row["phobos"] = rw.bench(launch) if row["phobos_err"] < tol else None
        except Exception as e:  # one case failing leaves the others
            row["error"] = f"{type(e).__name__}: {e}"
        for col in ("torch", "phobos"):
            if row.get(col):
                row[col + "_tflops"] = round(flops / row[col] / 1e9, 1)
        row["wall_s"] = round(time.time() - t0, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\n{'kernel':<21} {'type':<5} {'BH':>4} {'N':>6} {'D':>4} {'causal':>6} {'torch TF/s':>10} {'phobos TF/s':>11} {'ratio':>6}  pins")
    for r in rows:
        t, p = r.get("torch_tflops"), r.get("phobos_tflops")
        ratio = f"{p / t:.2f}" if t and p else "-"
        print(f"{r['kernel']:<21} {r['dtype']:<5} {r['bh']:>4} {r['n']:>6} {r['d']:>4} {r['causal']:>6} {t or '-':>10} {p or '-':>11} {ratio:>6}  "
              f"{r.get('pins') or r.get('error', '')}")


def tune_pinned(case, log):
    """rw.tune with the case's pins (`--autotune`) added to the command."""
    cmd = [os.path.join(rw.BIN, "phobos-kbench"), os.path.join(rw.ROOT, "examples", case["file"]),
           "--dims", case["dims"], "--json", "--db", os.path.join(OUT, "attention.sqlite"),
           "--budget-ms", str(case.get("budget", 60))]
    if case.get("pins"):
        cmd += ["--autotune", case["pins"]]
    if case.get("types"):
        cmd += ["--types", case["types"]]
    for x in case.get("args", []):
        cmd += ["--arg", x]
    p = rw.run(cmd, log)
    for line in p.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        w = obj.get("winner")
        if isinstance(w, dict) and isinstance(w.get("point"), dict):
            return " ".join(f"{k}={v}" for k, v in w["point"].items()), w.get("median_ms")
    return None, None


if __name__ == "__main__":
    main()
