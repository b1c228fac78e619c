#!/usr/bin/env python3
"""A model of the persistent walk's balance and L2 traffic (bench/NOTES.md a15; WALK), run on
the CPU.

    python3 bench/exp/walk_model.py

The logical grid is gx = cdiv(N, BR) row blocks by gy = BH heads; G persistent blocks (132 on
the H200) walk it. Causal attention maps rb = gx - 1 - bx (the longest row blocks first) and a
row block's work is rb + 1 key tiles (BC = BR); non-causal, gx tiles each.

  - WALK=0 (round robin, x fastest): block j takes t = j, j + G, ..; bx = t % gx, by = t / gx.
  - WALK=1 (snake, x slowest): round r = 0, 1, .. < cdiv(gx * gy, G), block j takes
    t = r * G + (r odd ? G - 1 - j : j), skipping t >= gx * gy; bx = t / gy, by = t % gy.
  - WALK=2 (pairs, bench/NOTES.md a18): units u = j, j + G, .. < cdiv(gx, 2) * gy, each the
    logical blocks x = p and gx - 1 - p of y (p = u % cdiv(gx, 2), y = u / cdiv(gx, 2)), one
    after the other; the middle x of an odd gx once.

Balance: the makespan is the heaviest block's work; the bound is max(mean, the longest row
block). L2: a step-by-step replay in which every block advances one key tile a step (the blocks
in lock step, as at equal speed), each tile reading the head's K and V tile (2 * BC * D * 2
bytes) through an LRU cache of `l2_mb`, plus q and O once a row block; it counts the bytes that
miss. It ignores the L2's two partitions and the ring's prefetch, so it is a ranking, not a
prediction of bytes to the byte.

The checks at the end fail (exit 1) if the snake is not a permutation of the logical grid, if
the two walks do not cover the same blocks, or if the snake misses the balanced bound's 0.99 at
the points the notes quote.
"""

from collections import OrderedDict
import sys


def cdiv(a, b):
    return -(-a // b)


def walk(gx, gy, g, kind):
    """Each block's logical blocks (bx, by), in its walk's order."""
    n = gx * gy
    out = [[] for _ in range(g)]
    if kind == 2:
        half = cdiv(gx, 2)
        for j in range(g):
            for u in range(j, half * gy, g):
                y, p = divmod(u, half)
                out[j].append((p, y))
                if gx - 1 - p != p:
                    out[j].append((gx - 1 - p, y))
        return out
    if kind == 0:
        for j in range(g):
            for t in range(j, n, g):
                out[j].append((t % gx, t // gx))
        return out
    for r in range(cdiv(n, g)):
        for j in range(g):
            t = r * g + (g - 1 - j if r % 2 else j)
            if t < n:  # a `continue`: a low j may be past the end while a high j is not
                out[j].append((t // gy, t % gy))
    return out


def work(gx, bx, causal):
    return (gx - bx) if causal else gx  # rb + 1 with rb = gx - 1 - bx


def balance(gx, gy, g, kind, causal):
    w = walk(gx, gy, g, kind)
    loads = [sum(work(gx, bx, causal) for bx, _ in blocks) for blocks in w]
    total = sum(loads)
    bound = max(total / g, gx if causal else gx)
    return max(loads), total / g, bound / max(loads)


def l2_bytes(gx, gy, g, kind, causal, d, br, l2_mb=50.0):
    """Bytes missing an LRU L2 in a lock-step replay (K/V tiles; q and O once a row block)."""
    w = walk(gx, gy, g, kind)
    tile = 2 * br * d * 2  # K and V tiles of one key step, 2-byte elements
    cap = int(l2_mb * 2**20) // tile
    lru = OrderedDict()
    miss = 0
    # Each block's queue of (head, key tile) reads, a logical block after another.
    queues = []
    for blocks in w:
        q = []
        for bx, by in blocks:
            q.extend((by, c) for c in range(work(gx, bx, causal)))
        queues.append(q)
    step = 0
    while True:
        live = False
        for q in queues:
            if step < len(q):
                live = True
                key = q[step]
                if key in lru:
                    lru.move_to_end(key)
                else:
                    miss += tile
                    lru[key] = True
                    if len(lru) > cap:
                        lru.popitem(last=False)
        if not live:
            break
        step += 1
    qo = 2 * gx * gy * br * d * 2  # q read and O written once each
    return miss + qo


def main():
    ok = True
    for gx, gy, g in [(32, 64, 132), (32, 32, 132), (64, 64, 132), (5, 3, 2), (8, 2, 2), (9, 1, 4)]:
        seen = [sorted(b for blocks in walk(gx, gy, g, k) for b in blocks) for k in (0, 1, 2)]
        full = sorted((x, y) for x in range(gx) for y in range(gy))
        if any(s != full for s in seen):
            print(f"FAIL: a walk is not a permutation at gx={gx} gy={gy} G={g}")
            ok = False
    print("balance (the heaviest block's key tiles, the mean, the fraction of the balanced bound)")
    for n, bh, br in [(4096, 64, 128), (4096, 32, 128), (8192, 64, 128), (4096, 16, 128), (2048, 64, 128)]:
        gx = cdiv(n, br)
        for causal in (1, 0):
            row = []
            for kind in (0, 1, 2):
                mx, mean, frac = balance(gx, bh, 132, kind, causal)
                row.append(f"WALK={kind}: max {mx} mean {mean:.1f} -> {frac:.3f}")
            print(f"  N={n} BH={bh} gx={gx} causal={causal}: " + "; ".join(row))
            if causal and n == 4096 and bh in (32, 64):
                if balance(gx, bh, 132, 1, 1)[2] < 0.99:
                    print("FAIL: the snake misses 0.99 of the bound")
                    ok = False
                if balance(gx, bh, 132, 2, 1)[2] < 0.96:
                    print("FAIL: the pairs miss 0.96 of the bound")
                    ok = False
    print("L2 model (LRU 50 MB, lock step): HBM bytes, MB")
    for n, bh, d, br, bc in [(4096, 64, 64, 128, 128), (4096, 32, 64, 128, 128), (4096, 32, 128, 128, 128), (4096, 64, 128, 128, 128)]:
        gx = cdiv(n, br)
        for causal in (1, 0):
            kv = 2 * bh * n * d * 2 / 2**20
            got = [l2_bytes(gx, bh, 132, kind, causal, d, bc) / 2**20 for kind in (0, 1, 2)]
            print(
                f"  BH={bh} N={n} D={d} causal={causal} (K+V {kv:.0f} MB):"
                f" WALK=0 {got[0]:.0f}, WALK=1 {got[1]:.0f}, WALK=2 {got[2]:.0f}"
            )
    if not ok:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
