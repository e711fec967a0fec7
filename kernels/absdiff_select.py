"""absdiff_select: |a - b| via ?: and the three-way comparison (x > y) - (x < y)."""
import numpy as np

KERNEL = "absdiff_select"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "a": rng.integers(-20, 20, size, dtype=np.int32),
        "b": rng.integers(-20, 20, size, dtype=np.int32),
        "d": np.zeros(size, dtype=np.int32), "cmp": np.zeros(size, dtype=np.int32)}}


LAUNCHES = [_launch(1, 12, 40), _launch(2, 5, 41)]


def oracle(args, grid, block):
    a = args["a"].astype(np.int64)
    b = args["b"].astype(np.int64)
    return {"a": args["a"], "b": args["b"], "d": np.abs(a - b), "cmp": np.sign(a - b)}
