"""vec_add: c = a + b (int) for the first n elements; partial warps, several CTAs."""
import numpy as np

KERNEL = "vec_add"


def _launch(grid, block, n, size, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "a": rng.integers(-1000, 1000, size, dtype=np.int32),
        "b": rng.integers(-1000, 1000, size, dtype=np.int32),
        "c": np.full(size, -7, dtype=np.int32), "n": n}}


LAUNCHES = [
    {"grid": 1, "block": 3, "args": {"a": np.array([1, 2, 3], dtype=np.int32),
                                     "b": np.array([4, 5, 6], dtype=np.int32),
                                     "c": np.zeros(3, dtype=np.int32), "n": 3}},
    _launch(1, 8, 7, 8, 1),
    _launch(2, 6, 12, 12, 2),
    _launch(4, 4, 13, 16, 3),
]


def oracle(args, grid, block):
    n = args["n"]
    c = args["c"].copy()
    c[:n] = args["a"][:n].astype(np.int64) + args["b"][:n]
    return {"a": args["a"], "b": args["b"], "c": c}
