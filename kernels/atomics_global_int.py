"""atomics_global_int: atomicAdd/Sub/Min/Max/And/Or/Xor (int) on global words; final
values only (order-independent)."""
from functools import reduce

import numpy as np

from qgpu.suite import i32_array

KERNEL = "atomics_global_int"


def _launch(grid, block, seed, init):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-2**31, 2**31 - 1, grid * block, dtype=np.int32),
        "acc": i32_array(init)}}


LAUNCHES = [_launch(1, 16, 430, [0, 0, 2**31 - 1, -2**31, -1, 0, 0]),
            _launch(4, 4, 431, [5, -5, 0, 0, 0x0F0F0F0F, 0x1000, 77]),
            _launch(3, 1, 432, [1, 2, 3, 4, 5, 6, 7])]


def oracle(args, grid, block):
    v = [int(x) for x in args["in"]]
    a = [int(x) for x in args["acc"]]
    final = [a[0] + sum(v), a[1] - sum(v), min([a[2]] + v), max([a[3]] + v),
             reduce(lambda x, y: x & y, v, a[4]), reduce(lambda x, y: x | y, v, a[5]),
             reduce(lambda x, y: x ^ y, v, a[6])]
    return {"in": args["in"], "acc": i32_array(final)}
