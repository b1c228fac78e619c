#!/usr/bin/env python3
"""A model of PERSIST's synchronization (bench/NOTES.md a14; emit/producer.rs, emit/ahead.rs),
after producer_model.py (a13), run on the CPU.

    python3 bench/exp/persist_model.py

One persistent block walks several logical blocks (0-5 of them, 0-7 key tiles each, zero
included). Actors: one to three consumer warpgroups and the producer's issuing lane, each with
its own ring counter t that runs on across the logical blocks (never reset). Three buffers with
full mbarriers (the producer's expect_tx arrival and the copy's bytes) and empty ones (one
arrival a consumer warpgroup). The steps are the emitted ones:
  - consumers, each logical block: copy their share of q into the resident q (cp.async, all
    threads: a warpgroup writes rows the other reads), meet at their named barrier; prev =
    (t + 2) % 3; when t == 0 zero buffer 2; meet at the named barrier; each iteration: g = t++,
    wait on buffer g % 3's full barrier for parity (g / 3) & 1, the products read q, buffer g % 3
    and prev (the deferred P·V with the previous tile, or the zeroed buffer for g = 0; at a later
    logical block's first iteration the previous block's last tile, with P zeroed), the deferred
    product's wait releases prev on its empty barrier, prev = g % 3; after the loop meet at the
    named barrier (ahead_end's), the last deferred product reads prev; then the epilogue;
  - the producer, each logical block, each tile: g = t++; when g >= 2, wait on buffer g % 3's
    empty barrier for parity ((g - 2) / 3) & 1; arrive with expect_tx; issue the copy, which lands
    at a later step chosen at random.
With PERSIST=2 (q_tma) the producer loads q too: each logical block, before its tiles, when the
block is not the first it waits on the q-empty barrier for parity (n - 1) & 1 (n: logical blocks
so far; one arrival a consumer warpgroup, made after its loop, its last Q·Kᵀ completed), then
arrives on q-full with expect_tx and issues q's copy; the consumers wait on q-full for parity
n & 1 instead of copying q and meeting at the barrier after it.
Random interleavings check that no wait hangs, that every read finds its own tile (the previous
tile, or the zeros, for a block's first deferred product), that no copy writes a buffer still
read or being zeroed, and that no consumer's q copy overwrites q while another reads it.
"""
import random

from interleave import interleave

S = 3


def run(blocks, consumers, seed, mutant=None, q_tma=False):
    rnd = random.Random(seed)
    full, empty, emptyc = [0] * S, [0] * S, [0] * S
    content = [None] * S
    reads = [set() for _ in range(consumers)]
    zeroing = [False]
    q = [None]
    in_flight = []  # (buffer, tile) copies issued, not landed
    bar = {"arrived": 0, "gen": 0}
    qfull, qempty, qemptyc = [0], [0], [0]

    def passes(done, b, parity):
        return (done[b] & 1) != parity

    def release(b):
        emptyc[b] += 1
        if emptyc[b] == consumers:
            emptyc[b] = 0
            empty[b] += 1

    def barrier():
        gen = bar["gen"]
        bar["arrived"] += 1
        if bar["arrived"] == consumers:
            bar["arrived"] = 0
            bar["gen"] += 1
        while bar["gen"] == gen:
            yield

    def writable(b):
        return all(b not in r for r in reads) and not (b == S - 1 and zeroing[0])

    # Global tile numbers: tile g of the block's walk belongs to logical block blk, key tile j.
    tiles = [(blk, j) for blk, n in enumerate(blocks) for j in range(n)]

    def consumer(w):
        t = 0
        for blk, n in enumerate(blocks):
            if q_tma:
                while not passes(qfull, 0, blk & 1):
                    yield
            else:
                assert all("q" not in r for i, r in enumerate(reads) if i != w), (w, blk, reads)
                q[0] = blk
                yield
                yield from barrier()
            prev = S - 1 if mutant == "prev fixed" else (t + S - 1) % S
            if t == 0 or mutant == "zero every block":
                zeroing[0] = True
                assert all(f != S - 1 for f, _ in in_flight), in_flight
                content[S - 1] = -1
                yield
            yield from barrier()
            zeroing[0] = False
            for j in range(n):
                g = t
                t += 1
                buf = g % S
                while not passes(full, buf, (g // S) & 1):
                    yield
                assert content[buf] == g, (w, blk, j, buf, content)
                assert content[prev] == g - 1, (w, blk, j, prev, content)
                assert q[0] == blk, (w, blk, q)
                if q_tma and mutant == "q released early" and j == 0:
                    qemptyc[0] += 1
                    if qemptyc[0] == consumers:
                        qemptyc[0] = 0
                        qempty[0] += 1
                reads[w] = {buf, prev, "q"}
                assert all(f not in reads[w] for f, _ in in_flight), (w, g, in_flight)
                yield
                reads[w] = {buf}
                release(prev)
                prev = buf
                yield
            reads[w] = set()
            if q_tma and mutant != "q released early":
                qemptyc[0] += 1
                if qemptyc[0] == consumers:
                    qemptyc[0] = 0
                    qempty[0] += 1
            yield from barrier()  # ahead_end's, before the last deferred product
            assert content[prev] == t - 1, (w, blk, prev, content)
            reads[w] = {prev}
            yield
            reads[w] = set()
            yield  # the epilogue: acc / l, the O store

    def producer():
        t = 0
        for blk, n in enumerate(blocks):
            if mutant == "producer restarts":
                t = 0
            yield  # the block's bounds
            if q_tma:
                if blk >= 1:
                    while not passes(qempty, 0, (blk - 1) & 1):
                        yield
                assert all("q" not in r for r in reads), (blk, reads)
                in_flight.append(("q", blk))
                yield
            for j in range(n):
                g = t
                t += 1
                b = g % S
                if g >= 2:
                    while not passes(empty, b, ((g - 2) // S) & 1):
                        yield
                assert writable(b), (g, b, reads, zeroing)
                in_flight.append((b, g))
                yield
        assert t == len(tiles) or mutant

    def land():
        if in_flight and rnd.random() < 0.5:
            b, g = in_flight.pop(rnd.randrange(len(in_flight)))
            if b == "q":
                assert all("q" not in r for r in reads), (g, reads)
                q[0] = g
                qfull[0] += 1
                return
            assert writable(b), (g, b, reads)
            content[b] = g
            full[b] += 1

    gens = [consumer(w) for w in range(consumers)] + [producer()]
    interleave(gens, rnd, 400000, f"{blocks}, {consumers} consumers, seed {seed}", land,
               lambda: bool(in_flight))


if __name__ == "__main__":
    rnd = random.Random(7)
    walks = [[]] + [[rnd.randrange(8) for _ in range(rnd.randrange(1, 6))] for _ in range(60)]
    walks += [[1] * 5, [2] * 5, [3] * 4, [0, 4, 0, 5], [7, 1, 7]]
    for q_tma in (False, True):
        for blocks in walks:
            for consumers in (1, 2, 3):
                for seed in range(40):
                    run(blocks, consumers, seed, q_tma=q_tma)
    # The checks can fail: each of these departures from the emitted protocol fails them.
    for mutant in ("prev fixed", "zero every block", "producer restarts", "q released early"):
        failed = 0
        for blocks in walks[1:20]:
            for seed in range(10):
                try:
                    run(blocks, 2, seed, mutant, q_tma=mutant == "q released early")
                except AssertionError:
                    failed += 1
        assert failed, mutant
        print(f"{mutant}: fails {failed} of {19 * 10} runs")
    print(f"ok: {len(walks)} walks of 0-5 logical blocks (0-7 tiles each), 1-3 consumer "
          "warpgroups and the producer, 40 interleavings each, q copied by the consumers "
          "(PERSIST=1) and by the producer (PERSIST=2)")
