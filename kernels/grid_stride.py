"""grid_stride: a grid-stride loop covering n elements with fewer threads than elements."""
import numpy as np

KERNEL = "grid_stride"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "a": rng.integers(-1000, 1000, n, dtype=np.int32),
        "out": np.zeros(n, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 4, 30, 50), _launch(2, 3, 25, 51), _launch(4, 4, 40, 52),
            _launch(1, 1, 9, 53)]


def oracle(args, grid, block):
    a = args["a"].astype(np.int64)
    return {"a": args["a"], "out": 3 * a - np.arange(args["n"])}
