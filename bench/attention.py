#!/usr/bin/env python3
"""Attention forward: Phobos tuned against torch's scaled_dot_product_attention, in one process.

    python3 bench/attention.py [--quick] [--only-d128] [--causal] [--kernel flash_attention]
                               [--case 32:4096:128:1,...] [--dtype f16,bf16] [--json out.json]
                               [--pins "PRODUCER=2 THREADS=384"]

For every case (batch-heads, tokens, head dim, causal or not, element type): phobos-kbench tunes
the example kernel for that problem — flash_attention.ph and attention_lse.ph at head dim 64,
flash_attention_d128.ph at 128 — in its own process (the results database under $OUT), then this
process loads the winner's PTX through the CUDA driver (bench/rowwise.py's loader) and times it
beside the baselines with `triton.testing.do_bench` (CUDA events, L2 flushed, median):

- torch's scaled_dot_product_attention through each backend it has for the problem (flash,
  cuDNN, memory-efficient; a backend that refuses the problem is left out), and the best of them;
- a Triton attention kernel (bench/triton_attention.py), autotuned over a few launch settings.

Every output is first checked against SDPA's default on the same random inputs, with the output
poisoned before the launch. TFLOP/s count 4·BH·N²·D (halved for causal), the same for every
column, so the ratios compare times; `× SDPA` is Phobos against the best SDPA backend.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rowwise as rw  # noqa: E402  (the driver loader, kbench and emit wrappers)
import triton_attention  # noqa: E402

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}

OUT = os.environ.get("OUT", os.path.join(rw.ROOT, "target", "attention"))
rw.OUT = OUT


def make(bh, n, d, dtype, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(bh, n, d, device="cuda", generator=g, dtype=DTYPES[dtype]) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    return q, k, v, o


def sdpa(q, k, v, causal):
    return F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=bool(causal))[0]


def sdpa_backends(q, k, v, causal, ref):
    """Median time of each SDPA backend that takes the problem and matches the reference."""
    out = {}
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel([backend]):
                err = rw.rel_err(sdpa(q, k, v, causal).float(), ref.double())
                if err < 1e-2:
                    out[name] = rw.bench(lambda: sdpa(q, k, v, causal))
        except RuntimeError:  # the backend does not take this problem here
            pass
    return out


def triton_time(q, k, v, causal, scale, ref):
    o = torch.full_like(q, float("nan"))
    triton_attention.attention(q, k, v, o, scale, causal)  # autotunes on the first call
    torch.cuda.synchronize()
    if rw.rel_err(o.float(), ref.double()) >= 1e-2:
        return None
    return rw.bench(lambda: triton_attention.attention(q, k, v, o, scale, causal))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only-d128", action="store_true", help="only the head-dim-128 cases")
    ap.add_argument("--causal", action="store_true", help="only the causal cases")
    ap.add_argument("--kernel", default="", help="only the cases of these examples, comma-separated stems")
    ap.add_argument("--case", default="", help="only these cases, comma-separated BH:N:D:CAUSAL "
                    "(e.g. 32:4096:128:1,32:4096:64:0); with --quick, the first of each")
    ap.add_argument("--dtype", default="f16", help="element types, comma-separated: f16, bf16")
    ap.add_argument("--json", default=os.path.join(OUT, "attention.json"))
    ap.add_argument("--pins", default="", help="more pins for every case (e.g. a winner of an "
                    "earlier run, to time it without tuning again): the tuner's space shrinks")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "attention.log")
    # (batch-heads, tokens, head dim, causal, example): attention_lse.ph also writes the row
    # log-sum-exp and runs its online softmax in base 2 (exp2).
    cases = [(32, 4096, 64, 0, "flash_attention.ph"), (64, 4096, 64, 0, "flash_attention.ph"),
             (64, 4096, 64, 1, "flash_attention.ph"), (16, 8192, 64, 0, "flash_attention.ph"),
             (32, 4096, 64, 0, "attention_lse.ph"), (64, 4096, 64, 1, "attention_lse.ph"),
             (32, 4096, 128, 0, "flash_attention_d128.ph"), (32, 4096, 128, 1, "flash_attention_d128.ph"),
             # The rest of issue 15's matrix: B·H 32 and 64, causal and not, at both head dims.
             (32, 4096, 64, 1, "flash_attention.ph"), (64, 4096, 128, 0, "flash_attention_d128.ph"),
             (64, 4096, 128, 1, "flash_attention_d128.ph")]
    if a.only_d128:
        cases = [c for c in cases if c[2] == 128]
    if a.causal:
        cases = [c for c in cases if c[3]]
    if a.kernel:
        stems = a.kernel.split(",")
        cases = [c for c in cases if c[4].removesuffix(".ph") in stems]
    if a.case:
        picked = []
        for want in a.case.split(","):
            try:
                key = tuple(int(x) for x in want.split(":"))
            except ValueError:
                ap.error(f"--case {want}: write BH:N:D:CAUSAL, e.g. 32:4096:128:0")
            found = [c for c in cases if c[:4] == key]
            if not found:
                ap.error(f"--case {want}: no such case (see the list in bench/attention.py)")
            picked += found[:1] if a.quick else found
        cases = picked
    elif a.quick:
        cases = cases[:1]
    dtypes = a.dtype.split(",")
    rw.ensure_bins()
    drv = rw.Driver()
    rows = []
    for (bh, n, d, causal, file), dtype in ((c, t) for t in dtypes for c in cases):
        t0 = time.time()
        row = dict(kernel=file.removesuffix(".ph"), dtype=dtype, bh=bh, n=n, d=d, causal=causal)
        flops = 4 * bh * n * n * d / (2 if causal else 1)
        try:
            q, k, v, o = make(bh, n, d, dtype)
            scale = 1 / math.sqrt(d)
            ref = sdpa(q, k, v, causal).float()
            row["sdpa"] = sdpa_backends(q, k, v, causal, ref)
            if row["sdpa"]:
                row["torch_backend"], row["torch"] = min(row["sdpa"].items(), key=lambda kv: kv[1])
            try:  # a Triton failure leaves the Phobos column
                row["triton"] = triton_time(q, k, v, causal, scale, ref)
            except Exception as e:
                row["triton_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            case = dict(name="attention", file=file, dims=f"BH={bh},N={n}",
                        args=[f"scale={scale}"], budget=60, types=f"T={dtype}")
            # Pinned either way: attention_lse.ph declares both, and a causal winner would
            # answer a different question.
            case["pins"] = f"CAUSAL={causal} {a.pins}".strip()
            pins, row["kbench_ms"] = tune_pinned(case, log)
            row["pins"] = pins
            if pins:
                # The launch phobos gives the problem (phobos emit's launch line).
                ptx, kname, params, threads, smem, launch_desc = rw.emit(case, pins, log)
                fn = drv.load(ptx, kname, smem)
                p = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in pins.split()}
                lse = torch.full((bh, n), float("nan"), device="cuda")
                tensors = dict(Q=q, K=k, V=v, O=o, L=lse, scale=scale, BH=bh, N=n)
                if "ph_tma0" in params:
                    # The producer's maps of K and V (in that order), boxes of BC keys.
                    tensors["ph_tma0"] = drv.tensor_map_heads(k, p["BC"])
                    tensors["ph_tma1"] = drv.tensor_map_heads(v, p["BC"])
                if "ph_tma2" in params:
                    # PERSIST=2: the producer's map of Q, boxes of BR rows.
                    tensors["ph_tma2"] = drv.tensor_map_heads(q, p["BR"])
                # PERSIST=1: the logical grid as two parameters, the blocks clamped to those
                # resident at once.
                grid = rw.launch_grid(drv, fn, launch_desc, threads, smem, tensors)
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
                row["phobos"] = rw.bench(launch) if row["phobos_err"] < 1e-2 else None
        except Exception as e:  # one case failing leaves the others
            row["error"] = f"{type(e).__name__}: {e}"
        for col in ("torch", "triton", "phobos"):
            if row.get(col):
                row[col + "_tflops"] = round(flops / row[col] / 1e9, 1)
        for name, ms in (row.get("sdpa") or {}).items():
            row[name + "_tflops"] = round(flops / ms / 1e9, 1)
        row["wall_s"] = round(time.time() - t0, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)
    cols = [("flash", "flash"), ("cudnn", "cudnn"), ("efficient", "effic."), ("triton", "triton"),
            ("phobos", "phobos")]
    print("\nTFLOP/s (4·BH·N²·D, halved for causal; median, L2 flushed); × SDPA: Phobos over the best"
          " SDPA backend, × Triton: over the Triton kernel")
    print(f"{'kernel':<16} {'type':>4} {'BH':>4} {'N':>6} {'D':>4} {'causal':>6} "
          + " ".join(f"{h:>7}" for _, h in cols) + f" {'× SDPA':>7} {'× Triton':>8}  pins")
    for r in rows:
        p, t, tr = r.get("phobos_tflops"), r.get("torch_tflops"), r.get("triton_tflops")
        vals = " ".join(f"{r.get(c + '_tflops') or '-':>7}" for c, _ in cols)
        vs_sdpa = f"{p / t:.2f}" if t and p else "-"
        vs_triton = f"{p / tr:.2f}" if tr and p else "-"
        print(f"{r['kernel']:<16} {r['dtype']:>4} {r['bh']:>4} {r['n']:>6} {r['d']:>4} {r['causal']:>6} {vals} "
              f"{vs_sdpa:>7} {vs_triton:>8}  {r.get('pins') or r.get('error', '')}{'  (triton: ' + r['triton_error'][:80] + ')' if r.get('triton_error') else ''}")


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
