"""matvec: y = M x + bias, one thread per row, several CTAs with idle threads."""
import numpy as np

KERNEL = "matvec"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "M": rng.integers(-20, 20, n * n, dtype=np.int32),
        "x": rng.integers(-20, 20, n, dtype=np.int32),
        "bias": rng.integers(-100, 100, n, dtype=np.int32),
        "y": np.zeros(n, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 4, 4, 200), _launch(2, 3, 6, 201), _launch(1, 8, 8, 202)]


def oracle(args, grid, block):
    n = args["n"]
    M = args["M"].astype(np.int64).reshape(n, n)
    y = M @ args["x"].astype(np.int64) + args["bias"]
    return {"M": args["M"], "x": args["x"], "bias": args["bias"], "y": y}
