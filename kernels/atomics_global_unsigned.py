"""atomics_global_unsigned: unsigned atomics; the old values returned by a counter's
atomicAdd are summed (a permutation of 0, step, 2 step, ... whatever the order)."""
from functools import reduce

import numpy as np

from qgpu.suite import u32_array

KERNEL = "atomics_global_unsigned"


def _launch(grid, block, seed, step):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, grid * block, dtype=np.uint32),
        "acc": u32_array([0xFFFFFFFF, 0, 0xFFFFFFFF, 0, 0, 0, 0, 0]), "step": step}}


LAUNCHES = [_launch(1, 16, 440, 1), _launch(4, 4, 441, 3), _launch(2, 5, 442, 0x10000001)]


def oracle(args, grid, block):
    v = [int(x) for x in args["in"]]
    a = [int(x) for x in args["acc"]]
    n, step = len(v), args["step"]
    final = [min([a[0]] + v), max([a[1]] + v), reduce(lambda x, y: x & y, v, a[2]),
             reduce(lambda x, y: x | y, v, a[3]), reduce(lambda x, y: x ^ y, v, a[4]),
             a[5] - sum(v), a[6] + n * step,
             a[7] + sum(a[6] + k * step for k in range(n))]
    return {"in": args["in"], "acc": u32_array(final)}
