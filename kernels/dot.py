"""dot: the demo dot product ([1, 2, 3] . [4, 5, 6] = 32) with atomicAdd per thread."""
import numpy as np

KERNEL = "dot"


def _launch(grid, block, a, b):
    return {"grid": grid, "block": block, "args": {
        "a": np.array(a, dtype=np.int32), "b": np.array(b, dtype=np.int32),
        "out": np.zeros(1, dtype=np.int32), "n": len(a)}}


_rng = np.random.default_rng(60)
LAUNCHES = [_launch(1, 3, [1, 2, 3], [4, 5, 6]),
            _launch(1, 16, list(_rng.integers(-50, 50, 16)), list(_rng.integers(-50, 50, 16))),
            _launch(3, 4, list(_rng.integers(-9, 9, 11)), list(_rng.integers(-9, 9, 11)))]


def oracle(args, grid, block):
    n = args["n"]
    total = int(np.dot(args["a"][:n].astype(np.int64), args["b"][:n].astype(np.int64)))
    return {"a": args["a"], "b": args["b"], "out": np.array([total], dtype=np.int32)}
