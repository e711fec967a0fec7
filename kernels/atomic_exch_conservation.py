"""atomic_exch_conservation: atomicExch into one slot, old values summed; the final
slot + total = initial slot + sum of inputs (single CTA: the barrier orders the readout)."""
import numpy as np

KERNEL = "atomic_exch_conservation"


def _launch(block, init, seed):
    rng = np.random.default_rng(seed)
    return {"grid": 1, "block": block, "args": {
        "in": rng.integers(-10000, 10000, block, dtype=np.int32),
        "slot": np.array([init], np.int32), "total": np.zeros(1, np.int32),
        "out": np.zeros(1, np.int32)}}


LAUNCHES = [_launch(16, 5, 460), _launch(6, -100, 461), _launch(1, 0, 462)]


def oracle(args, grid, block):
    conserved = int(args["slot"][0]) + int(args["in"].astype(np.int64).sum())
    return {"in": args["in"], "slot": np.zeros(1, np.int32), "total": np.zeros(1, np.int32),
            "out": np.array([conserved], np.int32)}
