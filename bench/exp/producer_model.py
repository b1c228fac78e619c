#!/usr/bin/env python3
"""A model of PRODUCER's synchronization (bench/NOTES.md a13; emit/producer.rs), run on the CPU.

    python3 bench/exp/producer_model.py

Actors: one to three consumer warpgroups and the producer (its one issuing lane). Three buffers,
each with a full mbarrier (one arrival: the producer's expect_tx, and the bytes: the phase
completes when the arrival is made and the copy has landed) and an empty one (one arrival a
consumer warpgroup). The steps are the emitted ones:
  - consumers: zero buffer 2 (the first deferred product's), meet at their named barrier, then
    each iteration j: wait on buffer j % 3's full barrier for parity (j / 3) & 1; the products read
    buffer j % 3 and the previous one (the deferred P·V; buffer 2, zeroed, for j = 0); the
    deferred product's wait releases the previous buffer on its empty barrier;
  - the producer, tile t = 0 .. trips - 1: when t >= 2, wait on buffer t % 3's empty barrier for
    parity ((t - 2) / 3) & 1; arrive with expect_tx; issue the copy, which lands (writes the
    buffer and completes the bytes) at a later step chosen at random.
Random interleavings over 0-19 trips check that no wait hangs, that every read finds the tile of
its own iteration (the zeros for iteration -1), and that no copy writes a buffer a consumer still
reads or one the zeroing has not finished with. `try_wait.parity(p)` passes when the barrier's
current phase parity differs from p (the phase of parity p has completed).
"""
import random

from interleave import interleave

S = 3


def run(trips, consumers, seed):
    rnd = random.Random(seed)
    full, empty, emptyc = [0] * S, [0] * S, [0] * S
    content = [None] * S
    reads = [set() for _ in range(consumers)]
    zeroed = [0]
    in_flight = []  # (buffer, tile) copies issued, not landed

    def passes(done, b, parity):
        return (done[b] & 1) != parity

    def release(b):
        emptyc[b] += 1
        if emptyc[b] == consumers:
            emptyc[b] = 0
            empty[b] += 1

    def writable(b):
        return all(b not in r for r in reads) and (b != S - 1 or zeroed[0] == consumers)

    def consumer(w):
        zeroed[0] += 1
        if zeroed[0] == consumers:
            content[S - 1] = -1
        while zeroed[0] < consumers:  # the named barrier after the zeroing
            yield
        yield
        prev = S - 1
        for j in range(trips):
            buf = j % S
            while not passes(full, buf, (j // S) & 1):
                yield
            assert content[buf] == j, (w, j, buf, content)
            assert content[prev] == j - 1, (w, j, prev, content)
            reads[w] = {buf, prev}
            assert all(f not in reads[w] for f, _ in in_flight), (w, j, in_flight)
            yield
            reads[w] = {buf}
            release(prev)
            prev = buf
            yield
        reads[w] = set()

    def producer():
        for t in range(trips):
            b = t % S
            if t >= 2:
                while not passes(empty, b, ((t - 2) // S) & 1):
                    yield
            assert writable(b), (t, b, reads, zeroed)
            in_flight.append((b, t))
            yield

    def land():
        # A copy in flight lands: it writes its buffer, then its bytes complete the full phase.
        if in_flight and rnd.random() < 0.5:
            b, t = in_flight.pop(rnd.randrange(len(in_flight)))
            assert writable(b), (t, b, reads)
            content[b] = t
            full[b] += 1

    gens = [consumer(w) for w in range(consumers)] + [producer()]
    interleave(gens, rnd, 200000, f"{trips} trips, {consumers} consumers, seed {seed}", land,
               lambda: bool(in_flight))


if __name__ == "__main__":
    for trips in range(20):
        for consumers in (1, 2, 3):
            for seed in range(200):
                run(trips, consumers, seed)
    print("ok: 0-19 trips, 1-3 consumer warpgroups and the producer, 200 interleavings each")
