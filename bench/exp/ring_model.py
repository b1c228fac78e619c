#!/usr/bin/env python3
"""A model of RING=1's synchronization (bench/NOTES.md a11; emit/pipe.rs `RingBars`), run on the CPU.

    python3 bench/exp/ring_model.py

Each warpgroup is one actor (its threads do the same steps); three buffers, each with a full and
an empty mbarrier counting one arrival an actor. The steps are the emitted loop's: the first
iteration's copies before the loop, then each iteration j: (if j + 1 < trips) wait on the empty
barrier of buffer (j + 1) % 3 for parity ((j - 1) / 3) & 1 when j >= 1, copy, arrive on its full
barrier; wait on buffer j % 3's full barrier for parity (j / 3) & 1; the products read buffer
j % 3 (S) and the previous one (the deferred P·V); the deferred product's wait releases the
previous buffer. Random interleavings of 1-3 actors over 0-19 trips check that no wait hangs,
that every read finds the copies of its own iteration (the zeroed buffer for iteration -1), and
that no copy overwrites a buffer an actor still reads. `try_wait.parity(p)` passes when the
barrier's current phase parity differs from p (the phase of parity p has completed).
"""
import random

from interleave import interleave

S = 3


def run(trips, actors, seed):
    rnd = random.Random(seed)
    full, fullc, empty, emptyc = [0] * S, [0] * S, [0] * S, [0] * S
    content = [{} for _ in range(S)]
    content[S - 1] = {w: -1 for w in range(actors)}  # the zeroed buffer, "iteration -1"
    reads = [set() for _ in range(actors)]

    def arrive(done, count, b):
        count[b] += 1
        if count[b] == actors:
            count[b] = 0
            done[b] += 1

    def passes(done, b, parity):
        return (done[b] & 1) != parity

    def prog(w):
        content[0][w] = 0
        arrive(full, fullc, 0)
        yield
        prev = S - 1
        for j in range(trips):
            buf = j % S
            if j + 1 < trips:
                nb = (buf + 1) % S
                if j >= 1:
                    while not passes(empty, nb, ((j - 1) // S) & 1):
                        yield
                assert all(nb not in r for r in reads), (w, j, nb, reads)
                content[nb][w] = j + 1
                arrive(full, fullc, nb)
                yield
            while not passes(full, buf, (j // S) & 1):
                yield
            assert all(content[buf].get(u) == j for u in range(actors)), (w, j, content[buf])
            assert all(content[prev].get(u) == j - 1 for u in range(actors)), (w, j, content[prev])
            reads[w] = {buf, prev}
            yield
            reads[w] = {buf}
            arrive(empty, emptyc, prev)
            prev = buf
            yield
        reads[w] = set()

    gens = [prog(w) for w in range(actors)]
    interleave(gens, rnd, 100000, f"{trips} trips, {actors} actors, seed {seed}")


if __name__ == "__main__":
    for trips in range(20):
        for actors in (1, 2, 3):
            for seed in range(200):
                run(trips, actors, seed)
    print("ok: 0-19 trips, 1-3 warpgroups, 200 interleavings each")
