"""gray_code: x ^ (x >> 1), its inverse by a loop (must give x back), parity by folding."""
import numpy as np

KERNEL = "gray_code"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, size, dtype=np.uint32),
        "gray": np.zeros(size, np.uint32), "back": np.zeros(size, np.uint32),
        "parity": np.zeros(size, np.uint32)}}


LAUNCHES = [_launch(1, 16, 320), _launch(4, 2, 321)]


def oracle(args, grid, block):
    xs = args["in"]
    return {"in": xs, "gray": xs ^ (xs >> 1), "back": xs.copy(),
            "parity": np.array([bin(int(x)).count("1") & 1 for x in xs], np.uint32)}
