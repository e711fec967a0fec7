"""early_return: returns at the bounds check, on negative data and inside a loop."""
import numpy as np

KERNEL = "early_return"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-3, 9, size, dtype=np.int32),
        "out": np.full(size, -1, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 16, 16, 220), _launch(2, 6, 9, 221), _launch(4, 4, 16, 222)]


def oracle(args, grid, block):
    out = args["out"].copy()
    for i in range(args["n"]):
        v = int(args["in"][i])
        if v >= 0 and 3**v <= 1000:
            out[i] = 3**v
    return {"in": args["in"], "out": out}
