"""atomic_cas_product: a CAS retry loop multiplying into one word (wraps mod 2^32)."""
import numpy as np

from qgpu.suite import i32_array

KERNEL = "atomic_cas_product"


def _launch(grid, block, seed, lo, hi):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(lo, hi, grid * block, dtype=np.int32),
        "prod": np.ones(1, np.int32)}}


LAUNCHES = [_launch(1, 8, 470, -3, 4), _launch(4, 4, 471, 1, 1000), _launch(2, 3, 472, -5, 6)]


def oracle(args, grid, block):
    product = 1
    for x in args["in"]:
        product *= int(x)
    return {"in": args["in"], "prod": i32_array([product])}
