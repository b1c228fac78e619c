#!/usr/bin/env python3
"""Static SASS instruction counts of the loops that issue tensor-core MMAs (offline).

    python3 scripts/sass_loop.py FILE.sass [--elements N]

FILE.sass is nvdisasm's listing (scripts/regs.py --sass DIR writes one per point). A loop is a
backward branch to a label; the loops whose body holds an HGMMA or HMMA are reported, innermost
first, with the number of instructions in the body (static: each instruction once, whichever
path runs) by opcode. With --elements (the elements of the softmax's tile a thread holds, e.g.
BR * BC / THREADS), the counts are also given per element. Each loop is also split at its first
WARPGROUP.ARRIVE / HGMMA / HMMA: the part before it (in attention, the copies of the next tiles,
several paths of which one runs) and the part from it on (the MMAs and the softmax, straight-line
code where every instruction runs each iteration, except the blocks a forward branch skips:
"from the first MMA, branches taken" leaves those out, as on a tile whose mask is skipped).
"""
import argparse
import collections
import re
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
LABEL = re.compile(r"^(\.L_x_\d+):")
BRANCH = re.compile(r"BRA\s+`?\(?(\.L_x_\d+)")


def parse(path):
    insns, labels = [], {}
    with open(path) as f:
        for line in f:
            m = LABEL.match(line.strip())
            if m:
                labels[m.group(1)] = len(insns)
                continue
            m = INSN.search(line)
            if m:
                b = BRANCH.search(line)
                insns.append((m.group(3), b.group(1) if b else None))
    return insns, labels


def loops(insns, labels):
    out = []
    for i, (op, target) in enumerate(insns):
        if target is not None and target in labels and labels[target] <= i:
            start = labels[target]
            body = insns[start:i + 1]
            if any(o.startswith(("HGMMA", "HMMA")) for o, _ in body):
                out.append((start, i, body))
    out.sort(key=lambda t: t[1] - t[0])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sass")
    ap.add_argument("--elements", type=float, default=0)
    args = ap.parse_args()
    insns, labels = parse(args.sass)
    found = loops(insns, labels)
    if not found:
        sys.exit("sass_loop: no loop with an HGMMA/HMMA in " + args.sass)
    for start, end, body in found:
        first = next(i for i, (o, _) in enumerate(body)
                     if o.startswith(("WARPGROUP.ARRIVE", "HGMMA", "HMMA")))
        tail = body[first:]
        skipped = set()
        for i, (_, target) in enumerate(tail):
            t = labels.get(target, -1) - start - first
            if i < t <= len(tail):
                skipped.update(range(i + 1, t))
        taken = [x for i, x in enumerate(tail) if i not in skipped]
        for name, part in (("whole", body), ("before the first MMA", body[:first]),
                           ("from the first MMA", tail),
                           ("from the first MMA, branches taken", taken)):
            report(f"loop [{start}, {end}], {name}", part, args.elements)


def report(title, part, elements):
    counts = collections.Counter(op.split(".")[0] for op, _ in part)
    total = sum(counts.values())
    per = f", {total / elements:.1f} per element" if elements else ""
    print(f"{title}: {total} instructions{per}")
    for op, n in counts.most_common():
        per = f"  {n / elements:5.2f}" if elements else ""
        print(f"  {op:16s} {n:5d}{per}")


if __name__ == "__main__":
    main()
