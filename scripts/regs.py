#!/usr/bin/env python3
"""Registers and spills of kernel points, offline (NVRTC + ptxas, no GPU).

    python3 scripts/regs.py examples/rms_norm.ph --dims M=16384,N=8192 --types T=bf16 \
        [--autotune "BLOCK=8192 THREADS=256"] [--sass DIR]
    python3 scripts/regs.py --rowwise [--types T=bf16]

Every point of the kernel's space that the pins leave (the product of the remaining @autotune
choices) is emitted by `phobos emit --ptx` specialized on the problem's alignment (as the tuner
compiles it), then assembled by ptxas for sm_90a with the point's register cap; one line a point:
registers, spill bytes, and the blocks a multiprocessor holds by registers (64K registers). Points
outside the space's @where are skipped. `--rowwise` runs the row-wise examples at the shapes of
bench/rowwise.py (BLOCK pinned to the smallest choice that holds the row). `--sass DIR` writes each
point's SASS, cubin and CUDA source there, and beside them (.live) the registers live at each
instruction (nvdisasm: PHOBOS_NVDISASM, `nvdisasm` on PATH, or `eval "$(bash scripts/cuda-tools.sh
--nvdisasm)"`). Points whose `@where` the `--dims` problem violates are skipped, as the tuner skips them.

Needs the phobos binary (target/debug or PHOBOS_BIN_DIR) and the CUDA tools
(`eval "$(bash scripts/cuda-tools.sh)"`, which also sets PHOBOS_PTXAS).
"""
import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("PHOBOS_BIN_DIR", os.path.join(ROOT, "target", "debug"))

# (file, dims) of bench/rowwise.py's norm and softmax cases.
ROWWISE = [
    ("softmax.ph", "M=32768,N=4096"),
    ("softmax.ph", "M=8192,N=8000"),
    ("softmax.ph", "M=16384,N=1024"),
    ("softmax_row.ph", "M=2048,N=50257"),
    ("softmax_row.ph", "M=4096,N=32000"),
    ("softmax_row.ph", "M=16384,N=16384"),
    ("rms_norm.ph", "M=16384,N=8192"),
    ("rms_norm.ph", "M=32768,N=4096"),
    ("rms_norm.ph", "M=65536,N=1024"),
    ("layer_norm.ph", "M=16384,N=8192"),
    ("layer_norm.ph", "M=32768,N=4096"),
    ("layer_norm.ph", "M=65536,N=1024"),
]


def tool(env, name):
    p = os.environ.get(env) or shutil.which(name)
    if not p:
        flag = " --nvdisasm" if name == "nvdisasm" else ""
        sys.exit(f"regs: {name} not found (set {env} or put it on PATH; "
                 f"eval \"$(bash scripts/cuda-tools.sh{flag})\")")
    return p


def space(file, types):
    cmd = [os.path.join(BIN, "phobos"), "space", file, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def points(names, pins):
    fixed = dict(kv.split("=") for kv in pins.split()) if pins else {}
    axes = []
    for n in names:
        if n["name"] in fixed:
            axes.append([(n["name"], int(fixed[n["name"]]))])
        else:
            axes.append([(n["name"], c) for c in n["choices"]])
    for combo in itertools.product(*axes):
        yield " ".join(f"{k}={v}" for k, v in combo)


def one(file, kernel, dims, types, pins, ptxas, sass_dir, nvdisasm):
    base = [os.path.join(BIN, "phobos"), "emit", file, "--kernel", kernel, "--autotune", pins]
    if dims:
        base += ["--dims", dims]
    if types:
        base += ["--types", types]
    src = subprocess.run(base, capture_output=True, text=True)
    if src.returncode != 0:
        return None  # outside the space (a @where), or an emit error: phobos emit says which
    m = re.search(r"// launch: (\d+) threads.*?(?:-maxrregcount=(\d+))?\n", src.stdout)
    threads, cap = int(m.group(1)), m.group(2)
    lb = re.search(r"__launch_bounds__\((\d+)(?:,\s*(\d+))?\)", src.stdout)
    ptx = subprocess.run(base + ["--ptx"], capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        cubin = os.path.join(d, "k.cubin")
        with open(p, "w") as f:
            f.write(ptx)
        cmd = [ptxas, "-arch=sm_90a", "-v", "-o", cubin, p]
        if cap:
            cmd[1:1] = ["-maxrregcount", cap]
        log = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
        if sass_dir:
            name = re.sub(r"[^A-Za-z0-9=_.-]+", "_", f"{kernel}_{types}_{dims}_{pins}")
            # .sass with source lines; .live with the live registers before each instruction.
            for ext, flags in ((".sass", ["-g"]), (".live", ["-plr", "-lrm", "count"])):
                sass = subprocess.run([nvdisasm, "-c", *flags, cubin], capture_output=True,
                                      text=True).stdout
                with open(os.path.join(sass_dir, name + ext), "w") as f:
                    f.write(sass)
            shutil.copy(cubin, os.path.join(sass_dir, name + ".cubin"))
            with open(os.path.join(sass_dir, name + ".cu"), "w") as f:
                f.write(src.stdout)
    regs = int(re.search(r"Used (\d+) registers", log).group(1))
    sp = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    spills = f"{sp.group(1)}/{sp.group(2)}" if sp else "?"
    # Registers are allocated per warp in units of 256 (8 a thread); 64K a multiprocessor.
    per_warp = (max(regs, 1) * 32 + 255) // 256 * 256
    warps = (threads + 31) // 32
    blocks = min(65536 // (per_warp * warps), 2048 // threads, 32)
    bounds = f"{lb.group(1)},{lb.group(2) or '-'}" if lb else "-"
    return f"{pins:44} threads {threads:4}  regs {regs:3}  spill {spills:>9}  blocks/SM {blocks}  " \
           f"bounds {bounds}  cap {cap or '-'}"


def run_file(file, dims, types, pins, ptxas, sass_dir, nvdisasm, pick_block):
    for k in space(file, types):
        print(f"{os.path.relpath(file, ROOT)} {k['kernel']} {dims} {types or ''}".rstrip())
        p = pins
        if pick_block and dims and not (p and "BLOCK=" in p):
            n = int(dict(kv.split("=") for kv in dims.split(","))["N"])
            block = [b for b in next(x for x in k["names"] if x["name"] == "BLOCK")["choices"]
                     if b >= n]
            p = f"{p} BLOCK={min(block)}".strip()
        for point in points(k["names"], p):
            line = one(file, k["kernel"], dims, types, point, ptxas, sass_dir, nvdisasm)
            if line:
                print("  " + line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?", help="a .ph file")
    ap.add_argument("--dims", default="", help="the problem, e.g. M=16384,N=8192")
    ap.add_argument("--types", default="", help="element types, e.g. T=bf16")
    ap.add_argument("--autotune", default="", help="pins that narrow the points, e.g. THREADS=256")
    ap.add_argument("--rowwise", action="store_true", help="the row-wise examples of bench/rowwise.py")
    ap.add_argument("--sass", default="", help="a folder for each point's SASS and CUDA source")
    a = ap.parse_args()
    ptxas = tool("PHOBOS_PTXAS", "ptxas")
    nvdisasm = tool("PHOBOS_NVDISASM", "nvdisasm") if a.sass else None
    if a.sass:
        os.makedirs(a.sass, exist_ok=True)
    if a.rowwise:
        for f, dims in ROWWISE:
            if f == "softmax.ph" and a.types:
                continue  # softmax.ph is f32 only
            run_file(os.path.join(ROOT, "examples", f), dims, a.types, a.autotune, ptxas, a.sass,
                     nvdisasm, True)
    elif a.file:
        run_file(a.file, a.dims, a.types, a.autotune, ptxas, a.sass, nvdisasm, False)
    else:
        ap.error("give a .ph file or --rowwise")


if __name__ == "__main__":
    main()
