"""reduce_shfl_down: shfl_down (width 4) sums of each group of 4, atomicAdd of all groups.

Blocks are multiples of 4 so that every shuffle reads an active lane."""
import numpy as np

KERNEL = "reduce_shfl_down"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-10**6, 10**6, size, dtype=np.int32),
        "out": np.zeros(1 + size // 4, dtype=np.int32)}}


LAUNCHES = [_launch(1, 4, 90), _launch(1, 16, 91), _launch(2, 8, 92), _launch(4, 4, 93)]


def oracle(args, grid, block):
    groups = args["in"].astype(np.int64).reshape(-1, 4).sum(axis=1)
    return {"in": args["in"], "out": np.concatenate([[groups.sum()], groups])}
