"""scan_shfl_up: prefix sum with shfl_up (width 4) per group and shared group totals.

Block sizes are multiples of 4 (every lane of a group active for the shuffles)."""
import numpy as np

KERNEL = "scan_shfl_up"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, size, dtype=np.int32),
        "out": np.zeros(size, dtype=np.int32)}}


LAUNCHES = [_launch(1, 4, 140), _launch(1, 16, 141), _launch(2, 8, 142), _launch(1, 12, 143)]


def oracle(args, grid, block):
    rows = args["in"].astype(np.int64).reshape(grid, block)
    return {"in": args["in"], "out": np.cumsum(rows, axis=1).ravel()}
