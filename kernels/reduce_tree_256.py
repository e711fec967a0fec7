"""reduce_tree_256: per-CTA sums with a 256-int shared array, <<<4, 256>>> over 1,024
ints (interpreter only until the model machine holds 256-thread blocks)."""
import numpy as np

KERNEL = "reduce_tree_256"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-100000, 100000, n, dtype=np.int32),
        "out": np.zeros(grid, np.int32), "n": n}}


LAUNCHES = [_launch(4, 256, 1024, 310), _launch(4, 256, 1000, 311)]


def oracle(args, grid, block):
    data = np.zeros(grid * block, np.int64)
    data[:args["n"]] = args["in"][:args["n"]]
    sums = data.reshape(grid, block).sum(axis=1)
    return {"in": args["in"], "out": ((sums + 2**31) % 2**32 - 2**31).astype(np.int32)}
