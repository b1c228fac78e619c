#!/usr/bin/env python3
"""cuBLAS (through torch) and an autotuned Triton matmul, timed the way BENCH.md asks.

    python3 bench/baselines.py --sizes 4096x4096x4096,8192x8192x8192 --dtypes fp16,bf16 \
        [--json out.json] [--no-triton]

Prints one line per (dtype, size): cuBLAS and Triton TFLOP/s, medians of do_bench on fresh
random data with the L2 flushed between repeats (do_bench does that), after a correctness check
against a float64 reference. The Triton kernel is a plain tiled matmul autotuned over a space
comparable to the Phobos example GEMMs' (block sizes, stages, warps, group-M).
"""
import argparse
import json
import sys
import time

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the GPU machine has Triton; a machine without it still gets cuBLAS
    triton = None

DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp8": torch.float8_e4m3fn,
    # f16 operands on examples/gemm_small.ph (bench/gemm.sh), with an f16 or f32 C; torch's
    # `a @ b` returns f16 for both.
    "fp16s": torch.float16,
    "fp16s32": torch.float16,
}

if triton is not None:

    def _configs():
        out = []
        for bm, bn, bk, stages, warps in [
            (128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8),
            (128, 128, 64, 4, 4), (128, 128, 64, 3, 8), (128, 128, 32, 4, 4),
            (64, 256, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
            (128, 256, 128, 3, 8), (256, 128, 128, 3, 8), (128, 128, 128, 4, 8),
        ]:
            out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GM": 8},
                                     num_stages=stages, num_warps=warps))
        return out

    @triton.autotune(configs=_configs(), key=["M", "N", "K", "ALLOW_TF32"])
    @triton.jit
    def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                ALLOW_TF32: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, GM: tl.constexpr):
        pid = tl.program_id(0)
        grid_m = tl.cdiv(M, BM)
        grid_n = tl.cdiv(N, BN)
        group = GM * grid_n
        first_m = (pid // group) * GM
        size_m = min(grid_m - first_m, GM)
        pm = first_m + (pid % group) % size_m
        pn = (pid % group) // size_m
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            kk = k * BK + rk
            x = tl.load(a, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            y = tl.load(b, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, y, acc, allow_tf32=ALLOW_TF32)
            a += BK * sak
            b += BK * sbk
        c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def triton_mm(a, b, out_dtype, allow_tf32):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=out_dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
        _matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                      c.stride(0), c.stride(1), ALLOW_TF32=allow_tf32)
        return c


def rel_err(out, ref):
    out = out.double()
    if torch.isnan(out).any():
        return float("inf")
    return ((out - ref).norm() / ref.norm()).item()


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") if triton else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096x4096x4096")
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--json")
    p.add_argument("--no-triton", action="store_true")
    p.add_argument("--col-b", default="fp8",
                   help="dtypes whose B is stored column-major (K-major), as Phobos runs them")
    args = p.parse_args()
    rows = []
    for name in args.dtypes.split(","):
        for size in args.sizes.split(","):
            M, N, K = (int(x) for x in size.split("x"))
            dt = DTYPES[name]
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            g = torch.Generator(device="cuda").manual_seed(M + N + K)
            a = torch.rand((M, K), device="cuda", generator=g).sub_(0.5).to(dt)
            b = torch.rand((K, N), device="cuda", generator=g).sub_(0.5).to(dt)
            if name in args.col_b.split(","):
                b = b.t().contiguous().t()  # the same values, stored column-major
            flops = 2.0 * M * N * K
            row = {"dtype": name, "M": M, "N": N, "K": K,
                   "layout_b": "col" if not b.is_contiguous() else "row"}
            ref = a.double() @ b.double() if M * N * K <= 4096 ** 3 else None
            if name == "fp8":
                bt = b if not b.is_contiguous() else b.t().contiguous().t()  # cuBLASLt: B col-major
                one = torch.tensor(1.0, device="cuda")
                fn = lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                fn = lambda: a @ b
            out = fn()
            if ref is not None:
                row["cublas_err"] = rel_err(out, ref)
            t0 = time.time()
            row["cublas_tflops"] = flops / bench(fn) / 1e9
            if triton is not None and not args.no_triton and name != "fp8":
                out_dt = torch.float32 if name in ("fp32", "tf32", "fp16s32") else dt
                tf = lambda: triton_mm(a, b, out_dt, name == "tf32")
                t0 = time.time()
                out = tf()  # autotunes
                row["triton_tune_s"] = time.time() - t0
                if ref is not None:
                    row["triton_err"] = rel_err(out, ref)
                row["triton_tflops"] = flops / bench(tf) / 1e9
                row["triton_config"] = str(_matmul.best_config)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
