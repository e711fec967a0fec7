"""allreduce_shfl_xor: butterfly (xor-shuffle, width 4) sum, xor and max per group of 4."""
import numpy as np

KERNEL = "allreduce_shfl_xor"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, size, dtype=np.int32),
        "sum": np.zeros(size, dtype=np.int32), "xr": np.zeros(size, dtype=np.int32),
        "mx": np.zeros(size, dtype=np.int32)}}


LAUNCHES = [_launch(1, 4, 100), _launch(1, 12, 101), _launch(2, 8, 102)]


def oracle(args, grid, block):
    g = args["in"].astype(np.int64).reshape(-1, 4)
    xr = np.bitwise_xor.reduce(g, axis=1)
    return {"in": args["in"], "sum": np.repeat(g.sum(axis=1), 4),
            "xr": np.repeat(xr, 4), "mx": np.repeat(g.max(axis=1), 4)}
