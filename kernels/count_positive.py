"""count_positive: counts of positive, zero and negative elements with atomicAdd."""
import numpy as np

KERNEL = "count_positive"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-3, 4, grid * block, dtype=np.int32),
        "counts": np.zeros(3, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 16, 16, 110), _launch(2, 6, 10, 111), _launch(4, 4, 15, 112)]


def oracle(args, grid, block):
    v = args["in"][: args["n"]]
    counts = [int((v > 0).sum()), int((v == 0).sum()), int((v < 0).sum())]
    return {"in": args["in"], "counts": np.array(counts, dtype=np.int32)}
