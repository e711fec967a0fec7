"""dot_shared: dot product by shared-memory tree reduction per CTA + atomicAdd across CTAs."""
import numpy as np

KERNEL = "dot_shared"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "a": rng.integers(-100, 100, size, dtype=np.int32),
        "b": rng.integers(-100, 100, size, dtype=np.int32),
        "out": np.zeros(1, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(1, 4, 3, 61), _launch(1, 16, 16, 62), _launch(2, 8, 13, 63),
            _launch(4, 4, 16, 64)]


def oracle(args, grid, block):
    n = args["n"]
    total = int(np.dot(args["a"][:n].astype(np.int64), args["b"][:n].astype(np.int64)))
    return {"a": args["a"], "b": args["b"], "out": np.array([total], dtype=np.int32)}
