"""bitonic_sort: per-CTA bitonic sort of 4, 8 or 16 ints in shared memory (duplicates,
negatives)."""
import numpy as np

KERNEL = "bitonic_sort"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "data": rng.integers(-50, 50, grid * block, dtype=np.int32)}}


LAUNCHES = [_launch(1, 8, 360), _launch(1, 16, 361), _launch(2, 8, 362), _launch(4, 4, 363)]


def oracle(args, grid, block):
    return {"data": np.sort(args["data"].reshape(grid, block), axis=1).ravel()}
