#!/usr/bin/env python3
"""Offline compile check: NVRTC (sm_90a) to PTX, then `ptxas -v` for registers and spills.

Usage: nvrtc_check.py FILE.cu [-DNAME=VAL ...] [-I DIR ...] [--ptx OUT.ptx]
Needs `eval "$(scripts/cuda-tools.sh)"` (LD_LIBRARY_PATH with libnvrtc, PHOBOS_PTXAS).
Prints NVRTC's log on failure and ptxas's resource report per kernel on success.
"""
import ctypes, os, subprocess, sys, tempfile

def main():
    args = sys.argv[1:]
    src_path = args[0]
    opts = ["--gpu-architecture=compute_90a", "-std=c++17", "--device-as-default-execution-space"]
    ptx_out = None
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--ptx":
            ptx_out = args[i + 1]; i += 2; continue
        if a == "-I":
            opts.append("-I" + args[i + 1]); i += 2; continue
        opts.append(a); i += 1
    lib = ctypes.CDLL("libnvrtc.so.13")
    prog = ctypes.c_void_p()
    src = open(src_path, "rb").read()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src, os.path.basename(src_path).encode(), 0, None, None)
    assert rc == 0, rc
    copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), copts)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        sys.stderr.write(log.value.decode(errors="replace") + "\n")
    if rc != 0:
        print("NVRTC FAILED", file=sys.stderr)
        sys.exit(1)
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, ptx)
    ptx_text = ptx.value.decode()
    if ptx_out is None:
        fd, ptx_out = tempfile.mkstemp(suffix=".ptx"); os.close(fd)
    open(ptx_out, "w").write(ptx_text)
    ptxas = os.environ.get("PHOBOS_PTXAS", "ptxas")
    cubin = ptx_out[:-4] + ".cubin"
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", "-warn-spills", "-warn-lmem-usage", ptx_out, "-o", cubin],
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    sys.exit(r.returncode)

main()
