"""matmul: n x n integer matrix product, one thread per output (3x3, 4x4, 2x2; idle threads)."""
import numpy as np

KERNEL = "matmul"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "A": rng.integers(-9, 10, n * n, dtype=np.int32),
        "B": rng.integers(-9, 10, n * n, dtype=np.int32),
        "C": np.zeros(n * n, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 9, 3, 180), _launch(1, 16, 4, 181), _launch(2, 8, 4, 182),
            _launch(1, 4, 2, 183), _launch(2, 5, 3, 184)]


def oracle(args, grid, block):
    n = args["n"]
    A = args["A"].astype(np.int64).reshape(n, n)
    B = args["B"].astype(np.int64).reshape(n, n)
    return {"A": args["A"], "B": args["B"], "C": (A @ B).ravel()}
