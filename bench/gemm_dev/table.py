#!/usr/bin/env python3
"""Summaries for the GEMM development harness (run.sh calls it; python3 standard library only).

  table.py ptxas PTXAS_LOG        registers / stack / spills per kernel from `nvcc -Xptxas -v`
  table.py sass SASS_TXT          instruction mix per kernel from `cuobjdump --dump-sass`
  table.py table LOG PTXAS SASS   the results table: correctness first, then speed vs cuBLAS
"""
import re
import sys
from collections import OrderedDict

MIX = ["HGMMA", "QGMMA", "HMMA", "FFMA", "LDSM", "LDS", "LDG", "LDGSTS", "UTMALDG", "SYNCS", "BAR", "LDL", "STL"]


def ptxas(path):
    cur = None
    rows = OrderedDict()
    for line in open(path, errors="replace"):
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            rows[cur] = {}
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            rows[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            rows[cur]["regs"] = int(m.group(1))
    for k, v in rows.items():
        print(f"{k} regs={v.get('regs', '?')} stack={v.get('stack', '?')} spill_st={v.get('spill_st', '?')} "
              f"spill_ld={v.get('spill_ld', '?')}")


def sass(path):
    cur = None
    counts = OrderedDict()
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            counts[cur] = {k: 0 for k in MIX}
            continue
        if cur is None:
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", line)
        if m:
            op = m.group(2)
            if op in counts[cur]:
                counts[cur][op] += 1
    for k, v in counts.items():
        print(k + " " + " ".join(f"{op}={n}" for op, n in v.items() if n))


def key_of(name):
    # "sm90 f16 A:k B:n 128x256x64 ..." -> "f16_Ak_Bn"
    p = name.split()
    return f"{p[1]}_A{p[2][2]}_B{p[3][2]}"


def table(log, ptxas_path, sass_path):
    cfgs = OrderedDict()
    base = {}
    device = ""
    mixes = {}
    try:
        for line in open(sass_path):
            parts = line.split()
            if parts:
                mixes[parts[0]] = " ".join(parts[1:])
    except OSError:
        pass
    for line in open(log, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("DEVICE"):
            device = line
        elif line.startswith("CFG"):
            f = [x.strip() for x in line[4:].split("|")]
            i = int(f[0])
            cfgs[i] = dict(name=f[1], strat=f[2], threads=f[3], smem=f[4],
                           regs=f[5] if len(f) > 5 else "?", local=f[6] if len(f) > 6 else "?",
                           sym=f[7] if len(f) > 7 else "?", checks=[], times={}, layout="?", exit="")
        elif line.startswith("LAYOUT"):
            _, i, st = line.split()[:3]
            cfgs.setdefault(int(i), {}).update(layout=st)
        elif line.startswith("CHECK"):
            i = int(line.split()[1])
            cfgs[i]["checks"].append(line)
        elif line.startswith("TIME"):
            _, i, size, g, ms, tf = line.split()[:6]
            cfgs[int(i)]["times"][(int(size), g)] = float(tf)
        elif line.startswith("BASE"):
            p = line.split()
            if len(p) >= 5:
                base[(p[1], int(p[2]))] = float(p[4])
        elif line.startswith("EXIT"):
            i = int(line.split()[1])
            cfgs[i]["exit"] = line
    print(device)
    print("cuBLAS baselines (TFLOP/s, f32 C unless _out16):")
    for (k, s), v in sorted(base.items()):
        print(f"  {k:<18} {s:>5}  {v:7.1f}")
    print()
    hdr = (f"{'#':>2} {'configuration':<50} {'thr':>3} {'smem':>6} {'reg':>3} {'lmem':>4} {'check':<6} "
           f"{'max rel':>8} {'4096 g1':>7} {'4096 g8':>7} {'x cuBLAS':>8} {'8192':>7} {'x cuBLAS':>8}")
    print(hdr)
    print("-" * len(hdr))
    for i, c in cfgs.items():
        if "name" not in c:
            continue
        rels = [float(m.group(1)) for m in (re.search(r"rel=(\S+)", x) for x in c["checks"]) if m]
        fails = [x for x in c["checks"] if x.endswith("FAIL")]
        if c["layout"] == "BAD":
            st = "LAYOUT"
        elif fails or c["exit"]:
            st = "FAIL"
        elif c["checks"]:
            st = "ok"
        else:
            st = "-"
        t1 = c["times"].get((4096, "g1"))
        t8 = c["times"].get((4096, "g8"))
        tb = c["times"].get((8192, "g8"))
        k = key_of(c["name"])
        b4, b8 = base.get((k, 4096)), base.get((k, 8192))
        best4 = max([x for x in (t1, t8) if x] or [0])
        r4 = f"{best4 / b4:.3f}" if best4 and b4 else "-"
        r8 = f"{tb / b8:.3f}" if tb and b8 else "-"
        fmt = lambda x: f"{x:7.1f}" if x else f"{'-':>7}"
        print(f"{i:>2} {c['name']:<50} {c['threads']:>3} {c['smem']:>6} {c['regs']:>3} {c['local']:>4} {st:<6} "
              f"{(max(rels) if rels else float('nan')):8.1e} {fmt(t1)} {fmt(t8)} {r4:>8} {fmt(tb)} {r8:>8}")
    print()
    for i, c in cfgs.items():
        for x in c.get("checks", []):
            if x.endswith("FAIL"):
                print("  " + x)
        if c.get("exit"):
            print("  " + c["exit"][:300])
    print("\nSASS instruction mix:")
    for i, c in cfgs.items():
        if "sym" in c:
            print(f"  {i:>2} {mixes.get(c['sym'], '?')}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "ptxas":
        ptxas(sys.argv[2])
    elif mode == "sass":
        sass(sys.argv[2])
    else:
        table(sys.argv[2], sys.argv[3], sys.argv[4])
