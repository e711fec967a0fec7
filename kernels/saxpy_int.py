"""saxpy_int: y = alpha * x + y over n elements (alpha negative, zero and positive)."""
import numpy as np

KERNEL = "saxpy_int"


def _launch(grid, block, alpha, n, size, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "alpha": alpha, "x": rng.integers(-500, 500, size, dtype=np.int32),
        "y": rng.integers(-500, 500, size, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 5, 3, 5, 5, 10), _launch(2, 8, -7, 15, 16, 11),
            _launch(4, 3, 0, 10, 12, 12), _launch(1, 16, 1000, 16, 16, 13)]


def oracle(args, grid, block):
    n = args["n"]
    y = args["y"].astype(np.int64)
    y[:n] = args["alpha"] * args["x"][:n].astype(np.int64) + y[:n]
    return {"x": args["x"], "y": y}
