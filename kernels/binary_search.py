"""binary_search: lower_bound of each key in a sorted array (duplicates, out of range)."""
import numpy as np

KERNEL = "binary_search"

_SORTED = np.array([-40, -7, -7, 0, 3, 3, 3, 8, 15, 22, 22, 100, 101, 250, 999, 1000],
                   dtype=np.int32)


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "sorted": _SORTED[:n].copy(), "n": n,
        "keys": rng.integers(-50, 1010, grid * block, dtype=np.int32),
        "pos": np.zeros(grid * block, dtype=np.int32)}}


LAUNCHES = [_launch(1, 16, 16, 270), _launch(2, 8, 7, 271), _launch(4, 4, 1, 272)]


def oracle(args, grid, block):
    pos = np.searchsorted(args["sorted"][: args["n"]], args["keys"], side="left")
    return {"sorted": args["sorted"], "keys": args["keys"], "pos": pos}
