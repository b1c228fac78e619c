#!/usr/bin/env python3
"""A summary of Nsight Compute's per-instruction samples (bench/rowprof.sh with SOURCE=1).

    python3 bench/sassprof.py rowprof_sass.csv [KERNELS [TOP]]

For each profiled kernel (the first KERNELS, default all) of the source page's CSV: the warp
instructions executed, the share of each stall reason in the samples, the instructions executed
and the samples by opcode, and the TOP (default 12) SASS instructions with the most samples and
their three largest stall reasons. Instructions executed over the elements a launch covers give
the dynamic instructions an element (bench/NOTES.md r23).
"""
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def kernels_of(path):
    """The CSV's kernels: each a name, its header row and its instruction rows."""
    kernels = []
    for row in csv.reader(open(path)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernels.append({"name": row[1], "header": None, "rows": []})
        elif kernels and row[0] == "Address":
            kernels[-1]["header"] = row
        elif kernels:
            kernels[-1]["rows"].append(row)
    return kernels


def opcode(source):
    words = [w for w in source.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else "?"


def summarize(k, top):
    col = {n: i for i, n in enumerate(k["header"])}

    def num(row, name):
        try:
            return float(row[col[name]])
        except (KeyError, ValueError, IndexError):
            return 0.0

    rows = k["rows"]
    executed = sum(num(r, EXECUTED) for r in rows)
    samples = sum(num(r, SAMPLES) for r in rows) or 1.0
    stalls = [n for n in k["header"] if n.startswith("stall_") and "Not Issued" not in n]
    by_stall = {n: sum(num(r, n) for r in rows) for n in stalls}
    print(f"== {k['name']}: {len(rows)} SASS, warp instructions executed {executed:.4g}, samples {samples:.0f}")
    print("  stalls:", ", ".join(f"{n[6:]} {100 * v / samples:.1f}%"
                                 for n, v in sorted(by_stall.items(), key=lambda x: -x[1])[:9]))
    ran, sampled = collections.Counter(), collections.Counter()
    for r in rows:
        ran[opcode(r[col["Source"]])] += num(r, EXECUTED)
        sampled[opcode(r[col["Source"]])] += num(r, SAMPLES)
    print("  executed by opcode:", ", ".join(f"{n} {v:.3g}" for n, v in ran.most_common(14)))
    print("  samples by opcode:", ", ".join(f"{n} {100 * v / samples:.1f}%" for n, v in sampled.most_common(10)))
    for r in sorted(rows, key=lambda r: -num(r, SAMPLES))[:top]:
        reasons = sorted(((n[6:], num(r, n)) for n in stalls), key=lambda x: -x[1])[:3]
        print(f"  {r[col['Address']]:>6} {100 * num(r, SAMPLES) / samples:5.1f}% {r[col['Source']][:60]:60} {reasons}")


def main():
    kernels = kernels_of(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else len(kernels)
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    for k in kernels[:count]:
        if k["header"]:
            summarize(k, top)


if __name__ == "__main__":
    main()
