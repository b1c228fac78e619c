#!/usr/bin/env python3
"""Row-wise and memory-bound kernels: Phobos tuned, torch, Triton and a copy, in one process.

    python3 bench/rowwise.py [--only softmax,rms_norm] [--dtype bf16] [--shape 50257] [--quick]
                             [--pins ROW_SPLIT=4] [--json out.json] [--profile]

For every case (kernel, shape, dtype): phobos-kbench tunes the example kernel for that problem
(its own process, the results database under $OUT), then this process loads the winner's PTX
(`phobos emit --ptx` at the winning point, specialized on the problem) through the CUDA driver
and times it beside torch's op, a Triton kernel for the same op and a device-to-device copy of
the same bytes, all with `triton.testing.do_bench` (CUDA events, the L2 flushed before each
repeat, median). Every implementation's output is first checked against a float64 reference on
the same fresh random inputs, with the output poisoned before the launch. Bandwidth counts the
fewest bytes the op must move (each input read once, each output written once), the same for
every column, so the ratios compare times. The table comes last.

--pins fixes knobs for every tuning run (phobos-kbench --autotune; each case's kernel must
declare them), so a form the tuner would not pick can be timed and profiled beside the others.

--profile launches each implementation once instead of timing it (for Nsight Compute, which then
sees one launch of each: bench/rowprof.sh); the table then has no times.
"""
import argparse
import ctypes
import json
import math
import os
import re
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("PHOBOS_BIN_DIR", os.path.join(ROOT, ".gpu-bundle", "bin"))
OUT = os.environ.get("OUT", os.path.join(ROOT, "target", "rowwise"))
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def ensure_bins():
    """Phobos's binaries in BIN: a carried .gpu-bundle still packed is unpacked first
    (scripts/gpu-unpack.sh); without them the run stops before timing anything."""
    kbench = os.path.join(BIN, "phobos-kbench")
    if not os.path.exists(kbench):
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu-unpack.sh")], check=False)
    if not os.path.exists(kbench):
        sys.exit(f"no {kbench}: run scripts/gpu-bundle.sh here and carry .gpu-bundle, "
                 "or set PHOBOS_BIN_DIR to the folder of phobos-kbench")


# ---- Triton kernels (written the way the Triton tutorials write them) --------------------------

@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_softmax(x):
    m, n = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    warps = 4 if block < 2048 else (8 if block < 4096 else 16)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    grid = (min(m, sms * 8),)
    _softmax_kernel[grid](x, y, m, n, BLOCK=block, STAGES=2, num_warps=warps)
    return y


@triton.jit
def _softmax_online_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * n_cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    out = y_ptr + row.to(tl.int64) * n_cols
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(out + cols, (tl.exp(x - mx) / total).to(y_ptr.dtype.element_ty), mask=cols < n_cols)


def triton_softmax_online(x):
    y = torch.empty_like(x)
    _softmax_online_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=4096, num_warps=8)
    return y


@triton.jit
def _layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_cols, eps,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


def triton_layer_norm(x, w, b, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(m, device=x.device, dtype=torch.float32)
    rstd = torch.empty(m, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n)
    warps = min(max(block // 256, 1), 8)
    _layer_norm_kernel[(m,)](x, y, w, b, mean, rstd, n, eps, BLOCK=block, num_warps=warps)
    return y, mean, rstd


@triton.jit
def _rms_norm_kernel(x_ptr, y_ptr, w_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def triton_rms_norm(x, w, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    warps = min(max(block // 256, 1), 8)
    _rms_norm_kernel[(m,)](x, y, w, n, eps, BLOCK=block, num_warps=warps)
    return y


@triton.jit
def _cross_entropy_kernel(x_ptr, t_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * n_cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    t = tl.load(t_ptr + row)
    xt = tl.load(base + t).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(total) + mx - xt)


def triton_cross_entropy(x, t):
    loss = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    _cross_entropy_kernel[(x.shape[0],)](x, t, loss, x.shape[1], BLOCK=4096, num_warps=8)
    return loss


@triton.jit
def _transpose_kernel(x_ptr, y_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None].to(tl.int64) * n + rn[None, :], mask=mask)
    tl.store(y_ptr + rn[None, :].to(tl.int64) * m + rm[:, None], x, mask=mask)


def triton_transpose(x):
    m, n = x.shape
    y = torch.empty((n, m), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
    _transpose_kernel[grid](x, y, m, n, BM=64, BN=64, num_warps=4)
    return y


# ---- Phobos kernels, loaded into this process ---------------------------------------------------

class Driver:
    """The CUDA driver API through ctypes: load PTX, launch on torch's current stream."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the primary context, current on this thread

    def check(self, r, what):
        if r != 0:
            s = ctypes.c_char_p()
            self.cu.cuGetErrorString(r, ctypes.byref(s))
            raise RuntimeError(f"{what}: {s.value.decode() if s.value else r}")

    def load(self, ptx, name, smem):
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode())), "cuModuleLoadData")
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        if smem > 48 * 1024:
            # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
            self.check(self.cu.cuFuncSetAttribute(fn, 8, smem), "cuFuncSetAttribute")
        return fn

    def tensor_map_heads(self, t, box_rows):
        """The rank-3 TMA map of a row-major [BH, N, D] tensor of 2-byte elements that attention's
        producer reads (phobos_cuda's `TmaParam::heads`): boxes of one 128-byte swizzled line (64
        elements) by `box_rows` rows by one head, zeros past N. A (buffer, offset) pair: the map is
        128 bytes at a 64-byte aligned offset of the buffer."""
        bh, n, d = t.shape
        dtype = {torch.float16: 6, torch.bfloat16: 9}[t.dtype]  # CU_TENSOR_MAP_DATA_TYPE_*
        buf = (ctypes.c_uint8 * 192)()
        off = (-ctypes.addressof(buf)) % 64
        u64 = ctypes.c_uint64 * 3
        u32 = ctypes.c_uint32 * 3
        dims = u64(d, n, bh)
        strides = u64(d * 2, n * d * 2)
        box = u32(64, box_rows, 1)
        estr = u32(1, 1, 1)
        # interleave NONE, swizzle 128B (3), L2 promotion 256B (3), fill NONE (zeros)
        self.check(self.cu.cuTensorMapEncodeTiled(
            ctypes.byref(buf, off), dtype, 3, ctypes.c_void_p(t.data_ptr()), dims, strides, box,
            estr, 0, 3, 3, 0), "cuTensorMapEncodeTiled")
        return (buf, off)

    def resident_blocks(self, fn, threads, smem):
        """Blocks of `fn` resident on the whole device at once (at least one): the clamp of a
        persistent kernel's grid, as phobos-gpu's `launch_prepared` computes it."""
        per_sm = ctypes.c_int()
        self.check(self.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(per_sm), fn, threads, ctypes.c_size_t(smem)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return max(per_sm.value, 1) * torch.cuda.get_device_properties(0).multi_processor_count

    def launch(self, fn, grid, threads, smem, args):
        holders = []
        for a in args:
            if isinstance(a, tuple):  # a tensor map: its bytes, passed by value
                holders.append(a)
            elif isinstance(a, torch.Tensor):
                holders.append(ctypes.c_void_p(a.data_ptr()))
            elif isinstance(a, float):
                holders.append(ctypes.c_float(a))
            else:
                holders.append(ctypes.c_int(a))
        ptrs = (ctypes.c_void_p * len(holders))(*[
            ctypes.c_void_p(ctypes.addressof(h[0]) + h[1]) if isinstance(h, tuple)
            else ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], threads, 1, 1, smem, stream, ptrs, None),
                   "cuLaunchKernel")


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
        f.write(p.stdout[-20000:])
    return p


def tune(case, log):
    """phobos-kbench on the case's problem: the winner's pins and its time there (or Nones)."""
    cmd = [os.path.join(BIN, "phobos-kbench"), os.path.join(ROOT, "examples", case["file"]),
           "--dims", case["dims"], "--json", "--db", os.path.join(OUT, "rowwise.sqlite"),
           "--budget-ms", str(case.get("budget", 60))]
    if case.get("types"):
        cmd += ["--types", case["types"]]
    if PINS:
        cmd += ["--autotune", PINS.replace(" ", ",")]
    for a in case.get("args", []):
        cmd += ["--arg", a]
    p = run(cmd, log)
    for line in p.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        w = obj.get("winner")
        if isinstance(w, dict) and isinstance(w.get("point"), dict):
            pins = " ".join(f"{k}={v}" for k, v in w["point"].items())
            return pins, w.get("median_ms")
    return None, None


def emit(case, pins, log):
    base = [os.path.join(BIN, "phobos"), "emit", os.path.join(ROOT, "examples", case["file"]),
            "--dims", case["dims"], "--autotune", pins]
    if case.get("types"):
        base += ["--types", case["types"]]
    src = run(base, log).stdout
    ptx = run(base + ["--ptx"], log).stdout
    m = re.search(r"// launch: (\d+) threads, (\d+) bytes of dynamic shared memory", src)
    g = re.search(r"^// launch: .*, @grid \((\d+), (\d+), (\d+)\)", src, re.M)
    # The blocks the launch has (phobos-gpu's `launch_grid`: ROW_SPLIT's clusters, whole
    # clusters, a persistent kernel's tiles), its clusters and a persistent walk's logical grid.
    b = re.search(r"^// launch: .*, blocks \((\d+), (\d+), (\d+)\)", src, re.M)
    cl = re.search(r"^// launch: .*, clusters \((\d+), (\d+), (\d+)\)", src, re.M)
    pe = re.search(r"^// launch: .*, persistent over \((\d+), (\d+)\)", src, re.M)
    # Attributes before the name: `__cluster_dims__(..)` (ROW_SPLIT), `__launch_bounds__(..)`.
    sig = re.search(r'extern "C" __global__ void (?:__\w+__\([^)]*\) )*(\w+)\(([^)]*)\)', src)
    if not (m and sig and ".entry" in ptx):
        raise RuntimeError(f"phobos emit gave no kernel for {case['name']} at {pins}")
    if not (g and b):
        # phobos emit leaves the grid out when it reads more than --dims gives (a scalar), and
        # says `no launch: ..` where the problem's grid cannot be launched.
        raise RuntimeError(f"phobos emit gave no launch grid for {case['name']} at {pins} ({case['dims']}): "
                           + src.splitlines()[0])
    params = [p.strip().split()[-1] for p in sig.group(2).split(",")]
    # The launch as phobos computes it for the problem, never a copy of its rules here
    # (bench/NOTES.md r32: a formula copied here went stale when an example's @grid changed).
    launch = dict(grid=tuple(int(b.group(i)) for i in (1, 2, 3)),
                  cluster=int(cl.group(1)) if cl else 1,
                  logical=(int(pe.group(1)), int(pe.group(2))) if pe else None)
    return ptx, sig.group(1), params, int(m.group(1)), int(m.group(2)), launch


def launch_grid(drv, fn, launch, threads, smem, tensors):
    """The grid to launch `fn` with, from `emit`'s launch: its blocks; for a persistent kernel
    (bench/NOTES.md r18, r21) the logical grid passed as `ph_gx`, `ph_gy` (set in `tensors`) and
    the blocks clamped to those resident at once, in whole clusters, as phobos-gpu's
    `Gpu::launch_grid` does (which also bounds a clustered walk by the clusters the GPCs hold:
    not asked here)."""
    grid = launch["grid"]
    if launch["logical"]:
        tensors["ph_gx"], tensors["ph_gy"] = launch["logical"]
        c = launch["cluster"]
        resident = drv.resident_blocks(fn, threads, smem)
        grid = (max(min(grid[0], max(resident // c, 1) * c), 1), 1, 1)
    return grid


# ---- the cases ----------------------------------------------------------------------------------

def rel_err(out, ref):
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make(case):
    """Inputs, outputs (poisoned), the float64 reference, bytes, and the three implementations."""
    op, dt = case["op"], DT[case["dtype"]]
    dims = dict(kv.split("=") for kv in case["dims"].split(","))
    dims = {k: int(v) for k, v in dims.items()}
    g = torch.Generator(device="cuda").manual_seed(case.get("seed", 1))
    size = torch.finfo(dt).bits // 8
    if op in ("softmax", "softmax_online", "softmax_row"):
        m, n = dims["M"], dims["N"]
        x = (torch.randn(m, n, device="cuda", generator=g) * 4).to(dt)
        y = torch.full_like(x, float("nan"))
        ref = torch.softmax(x.double(), -1)
        tensors = {"X": x, "Y": y}
        nbytes = 2 * m * n * size
        impls = {"torch": lambda: torch.softmax(x, -1),
                 "triton": (lambda: triton_softmax(x)) if op == "softmax" else (lambda: triton_softmax_online(x))}
        outs = lambda: [y]
        refs = [ref]
    elif op == "layer_norm":
        m, n = dims["M"], dims["N"]
        x = (torch.randn(m, n, device="cuda", generator=g) * 2 + 0.5).to(dt)
        w = torch.randn(n, device="cuda", generator=g).to(dt)
        b = torch.randn(n, device="cuda", generator=g).to(dt)
        eps = 1e-5
        y = torch.full_like(x, float("nan"))
        mean = torch.full((m, 1), float("nan"), device="cuda")
        rstd = torch.full((m, 1), float("nan"), device="cuda")
        xd = x.double()
        mu = xd.mean(-1, keepdim=True)
        var = ((xd - mu) ** 2).mean(-1, keepdim=True)
        rs = 1 / torch.sqrt(var + eps)
        ref = (xd - mu) * rs * w.double() + b.double()
        tensors = {"X": x, "W": w, "B": b, "Y": y, "Mean": mean, "Rstd": rstd, "eps": eps}
        nbytes = 2 * m * n * size + 2 * n * size + 8 * m
        impls = {"torch": lambda: torch.ops.aten.native_layer_norm(x, [n], w, b, eps),
                 "triton": lambda: triton_layer_norm(x, w, b, eps)}
        outs = lambda: [y, mean, rstd]
        refs = [ref, mu, rs]
    elif op == "rms_norm":
        m, n = dims["M"], dims["N"]
        x = torch.randn(m, n, device="cuda", generator=g).to(dt)
        w = torch.randn(n, device="cuda", generator=g).to(dt)
        eps = 1e-6
        y = torch.full_like(x, float("nan"))
        xd = x.double()
        ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps) * w.double()
        tensors = {"X": x, "W": w, "Y": y, "eps": eps}
        nbytes = 2 * m * n * size + n * size
        impls = {"torch": lambda: torch.nn.functional.rms_norm(x, [n], w, eps),
                 "triton": lambda: triton_rms_norm(x, w, eps)}
        outs = lambda: [y]
        refs = [ref]
    elif op == "cross_entropy":
        m, v = dims["M"], dims["V"]
        x = (torch.randn(m, v, device="cuda", generator=g) * 3).to(dt)
        t = torch.randint(0, v, (m,), device="cuda", generator=g, dtype=torch.int32)
        loss = torch.full((m,), float("nan"), device="cuda")
        ref = torch.nn.functional.cross_entropy(x.double(), t.long(), reduction="none")
        tensors = {"X": x, "Target": t, "Loss": loss}
        nbytes = m * v * size + 8 * m
        impls = {"torch": lambda: torch.nn.functional.cross_entropy(x, t.long(), reduction="none"),
                 "triton": lambda: triton_cross_entropy(x, t)}
        outs = lambda: [loss]
        refs = [ref]
    elif op == "transpose":
        m, n = dims["M"], dims["N"]
        x = torch.randn(m, n, device="cuda", generator=g).to(dt)
        y = torch.full((n, m), float("nan"), device="cuda", dtype=dt)
        ref = x.double().t()
        tensors = {"X": x, "Y": y}
        nbytes = 2 * m * n * size
        impls = {"torch": lambda: x.t().contiguous(), "triton": lambda: triton_transpose(x)}
        outs = lambda: [y]
        refs = [ref]
    else:
        raise ValueError(op)
    tensors.update(dims)
    return tensors, outs, refs, nbytes, impls


def first(v):
    return v[0] if isinstance(v, (tuple, list)) else v


PROFILE = False
PINS = ""


def bench(fn):
    if PROFILE:
        fn()
        torch.cuda.synchronize()
        return None
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dtype", default="", help="f32 or bf16: only the cases of that dtype")
    ap.add_argument("--shape", default="", help="only the cases whose dims contain this text (50257)")
    ap.add_argument("--profile", action="store_true", help="one launch each, no timing")
    ap.add_argument("--pins", default="", help="knobs fixed for every tuning run (ROW_SPLIT=4)")
    ap.add_argument("--json", default=os.path.join(OUT, "rowwise.json"))
    a = ap.parse_args()
    global PROFILE, PINS
    PROFILE, PINS = a.profile, a.pins
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "rowwise.log")
    cases = []
    for dt in ("f32", "bf16"):
        types = "" if dt == "f32" else "T=bf16"
        for m, n in ((32768, 4096), (8192, 8000), (16384, 1024), (2048, 8192)):
            cases.append(dict(op="softmax", file="softmax.ph", dims=f"M={m},N={n}", dtype=dt, types=types))
        for m, n in ((2048, 50257), (4096, 32000), (16384, 16384)):
            cases.append(dict(op="softmax_online", file="softmax_online.ph", dims=f"M={m},N={n}", dtype=dt, types=types))
            # The same rows read once (the whole row in registers; PACK=1 packs bf16 rows).
            cases.append(dict(op="softmax_row", file="softmax_row.ph", dims=f"M={m},N={n}", dtype=dt, types=types))
        for m, n in ((16384, 8192), (32768, 4096), (65536, 1024)):
            cases.append(dict(op="layer_norm", file="layer_norm.ph", dims=f"M={m},N={n}", dtype=dt, types=types,
                              args=["eps=1e-5"]))
            cases.append(dict(op="rms_norm", file="rms_norm.ph", dims=f"M={m},N={n}", dtype=dt, types=types,
                              args=["eps=1e-6"]))
        for m, v in ((4096, 50257), (16384, 32000)):
            cases.append(dict(op="cross_entropy", file="cross_entropy.ph", dims=f"M={m},V={v}", dtype=dt, types=types))
    for dt in ("f32", "bf16"):
        for m, n in ((8191, 8193), (8192, 8192), (4096, 16384)):
            cases.append(dict(op="transpose", file="transpose.ph", dims=f"M={m},N={n}", dtype=dt,
                              types="" if dt == "f32" else "T=bf16"))
    for c in cases:
        c["name"] = c["op"]
    only = [s for s in a.only.split(",") if s]
    if only:
        cases = [c for c in cases if c["op"] in only]
    if a.dtype:
        cases = [c for c in cases if c["dtype"] == a.dtype]
    if a.shape:
        cases = [c for c in cases if a.shape in c["dims"]]
    if a.quick:
        seen, q = set(), []
        for c in cases:
            if (c["op"], c["dtype"]) not in seen:
                seen.add((c["op"], c["dtype"]))
                q.append(c)
        cases = q
    ensure_bins()
    drv = Driver()
    rows = []
    for c in cases:
        t0 = time.time()
        row = dict(op=c["op"], dtype=c["dtype"], dims=c["dims"])
        try:
            tensors, outs, refs, nbytes, impls = make(c)
            row["bytes"] = nbytes
            pins, row["kbench_ms"] = tune(c, log)
            row["pins"] = pins
            # The copy of the same bytes: read nbytes / 2, write nbytes / 2.
            src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            row["copy"] = bench(lambda: dst.copy_(src))
            for name, fn in impls.items():
                got = fn()
                got = got if isinstance(got, (tuple, list)) else [got]
                ref0 = refs[0]
                err = rel_err(first(got).reshape(ref0.shape), ref0)
                row[name + "_err"] = err
                row[name] = bench(fn) if err < 2e-2 else None
            if pins:
                ptx, kname, params, threads, smem, launch_desc = emit(c, pins, log)
                fn = drv.load(ptx, kname, smem)
                # ROW_SPLIT's clusters and ROWS_AHEAD's persistent walk come with the launch.
                grid = launch_grid(drv, fn, launch_desc, threads, smem, tensors)
                args = [tensors[p] for p in params]
                launch = lambda: drv.launch(fn, grid, threads, smem, args)
                for o in outs():
                    o.fill_(float("nan"))
                launch()
                torch.cuda.synchronize()
                errs = [rel_err(o.reshape(r.shape), r) for o, r in zip(outs(), refs)]
                row["phobos_err"] = max(errs)
                tol = 1e-5 if c["dtype"] == "f32" else 1e-2
                row["phobos"] = bench(launch) if max(errs) < tol else None
        except Exception as e:  # one case failing leaves the others
            row["error"] = f"{type(e).__name__}: {e}"
        row["wall_s"] = round(time.time() - t0, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)
    table(rows)


def table(rows):
    def bw(r, k):
        t = r.get(k)
        return r["bytes"] / t / 1e9 if t else None

    def f(x, w=7, p=2):
        return f"{x:{w}.{p}f}" if x is not None else " " * (w - 1) + "-"

    print()
    print("TB/s = fewest bytes / median time (do_bench, L2 flushed); ratios of times in this run")
    print(f"{'op':15} {'dtype':5} {'dims':17} {'phobos':>7} {'torch':>7} {'triton':>7} {'copy':>7}"
          f" {'xcopy':>6} {'xbest':>6}  winner")
    for r in rows:
        if "error" in r:
            print(f"{r['op']:15} {r['dtype']:5} {r['dims']:17} error: {r['error'][:80]}")
            continue
        p, t, tr, c = (bw(r, k) for k in ("phobos", "torch", "triton", "copy"))
        best = max([x for x in (t, tr) if x] or [0]) or None
        xc = p / c if p and c else None
        xb = p / best if p and best else None
        print(f"{r['op']:15} {r['dtype']:5} {r['dims']:17} {f(p)} {f(t)}"
              f" {f(tr)} {f(c)} {f(xc, 6)} {f(xb, 6)}  {r.get('pins')}")


if __name__ == "__main__":
    sys.exit(main())
