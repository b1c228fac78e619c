#!/usr/bin/env python3
"""Summarize bench/stalls.sh's Nsight Compute exports: per kernel, the warp-state section, the
sampled stalls per opcode and the instructions with the most samples.

usage: stalls_summary.py OUT_DIR
"""
import csv
import glob
import os
import re
import sys
from collections import defaultdict


def blocks(path):
    """The CSV tables of an export: one per kernel, each after a `"Kernel Name",<name>` line
    when several were profiled (the source page), or one table (the details page)."""
    rows = list(csv.reader(l for l in open(path, errors="replace") if l.startswith('"')))
    out = []
    for i, r in enumerate(rows):
        if r and r[0] == "Kernel Name" and len([c for c in r if c]) <= 2:
            out.append([])  # the next row is this kernel's header
        elif not out:
            out.append([r])
        else:
            out[-1].append(r)
    return [t for t in out if t]


def number(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def details(path):
    tables = blocks(path)
    if not tables:
        return []
    head, rows = tables[-1][0], tables[-1][1:]
    if "ID" not in head or "Metric Name" not in head:
        return []
    last = max(rows, key=lambda r: int(r[head.index("ID")] or 0))[head.index("ID")]
    pick = lambda r, k: r[head.index(k)] if k in head and head.index(k) < len(r) else ""
    mine = [r for r in rows if r[head.index("ID")] == last]
    got = [(pick(r, "Metric Name"), pick(r, "Metric Unit"), pick(r, "Metric Value"))
           for r in mine if pick(r, "Metric Name")]
    for r in mine:
        text = pick(r, "Rule Description")
        if text and pick(r, "Rule Type") != "INF":
            got.append(("rule: " + text.split(". ")[0][:150], "", pick(r, "Estimated Speedup")))
    return got


def sass(path):
    tables = blocks(path)
    if not tables:
        return None
    head, rows = tables[-1][0], tables[-1][1:]
    src = next((i for i, h in enumerate(head) if h.lower() == "source"), None)
    allc = next((i for i, h in enumerate(head) if "Sampling" in h and "All" in h), None)
    noti = next((i for i, h in enumerate(head) if "Sampling" in h and "Not" in h), None)
    if src is None or allc is None:
        return head, None
    reasons = [i for i, h in enumerate(head) if h.startswith("stall_") or h.startswith("smsp__pcsamp")]
    return head, [(r[src], number(r[allc]) or 0, number(r[noti]) if noti is not None else None,
                   {head[i]: number(r[i]) or 0 for i in reasons}) for r in rows if len(r) == len(head)]


def opcode(text):
    m = re.match(r"\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text)
    return m.group(1) if m else text.strip()[:20]


def main(out):
    points = {}
    if os.path.exists(f"{out}/points.txt"):
        for line in open(f"{out}/points.txt"):
            k, rest = line.split(" ", 1)
            points[k] = rest.strip()
    for path in sorted(glob.glob(f"{out}/*.sass.csv")):
        name = os.path.basename(path)[: -len(".sass.csv")]
        print(f"==== {name}: {points.get(name, 'cuBLAS through torch')}")
        for metric, unit, value in details(f"{out}/{name}.details.csv"):
            print(f"  {metric:<48} {value:>12} {unit}")
        got = sass(path)
        if got is None:
            print("  (no SASS page exported)")
            continue
        head, rows = got
        if rows is None:
            print(f"  (no sampling column among: {', '.join(head)})")
            continue
        total = sum(r[1] for r in rows) or 1
        by_op = defaultdict(float)
        by_reason = defaultdict(float)
        for text, n, _, reasons in rows:
            by_op[opcode(text)] += n
            for k, v in reasons.items():
                by_reason[k] += v
        print(f"  samples: {total:.0f}")
        print("  by opcode (share of all samples):")
        for op, n in sorted(by_op.items(), key=lambda kv: -kv[1])[:15]:
            print(f"    {op:<40} {100 * n / total:6.1f} %")
        if by_reason:
            print("  by reason:")
            for k, n in sorted(by_reason.items(), key=lambda kv: -kv[1])[:12]:
                print(f"    {k:<48} {100 * n / total:6.1f} %")
        print("  instructions with the most samples:")
        for text, n, noti, _ in sorted(rows, key=lambda r: -r[1])[:25]:
            extra = f" (not issued {noti:.0f})" if noti is not None else ""
            print(f"    {100 * n / total:6.1f} %  {text.strip()[:70]}{extra}")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/stalls")
