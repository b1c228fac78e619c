"""The scheduler the protocol models share (ring_model.py, producer_model.py, persist_model.py):
the actors are generators that yield at every point where another may run, and a seeded random
interleaving steps one of them at a time."""


def interleave(gens, rnd, steps, what, land=None, pending=lambda: False):
    """Steps a random one of `gens` at a time until all have finished and nothing is
    `pending`; before each step `land` (when given) may complete an asynchronous copy. A run
    still going after `steps` steps has a wait that never completes: AssertionError, naming
    `what`."""
    finished = [False] * len(gens)
    for _ in range(steps):
        if all(finished) and not pending():
            return
        if land:
            land()
        w = rnd.randrange(len(gens))
        if not finished[w]:
            try:
                next(gens[w])
            except StopIteration:
                finished[w] = True
    raise AssertionError(f"a wait never completes: {what}")
