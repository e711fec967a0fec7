"""odd_even_sort: odd-even transposition sort (n rounds with barriers), n <= blockDim.x."""
import numpy as np

KERNEL = "odd_even_sort"


def _launch(block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": 1, "block": block, "args": {
        "data": rng.integers(-1000, 1000, n, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(16, 16, 370), _launch(12, 10, 371), _launch(4, 3, 372)]


def oracle(args, grid, block):
    return {"data": np.sort(args["data"])}
