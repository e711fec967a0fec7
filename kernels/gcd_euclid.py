"""gcd_euclid: gcd by a loop of unsigned remainders, lcm with one division."""
import math

import numpy as np

from qgpu.suite import u32_array

KERNEL = "gcd_euclid"

_A = [12, 17, 0, 100, 1071, 4294967295, 65536, 81, 0, 7]
_B = [18, 5, 9, 75, 462, 65535, 4096, 0, 0, 7]


def _launch(grid, block, a, b):
    return {"grid": grid, "block": block, "args": {
        "a": u32_array(a), "b": u32_array(b), "g": np.zeros(len(a), dtype=np.uint32),
        "l": np.zeros(len(a), dtype=np.uint32)}}


LAUNCHES = [_launch(1, 10, _A, _B), _launch(2, 4, _B[:8], _A[:8])]


def oracle(args, grid, block):
    g, l = [], []
    for x, y in zip(args["a"], args["b"], strict=True):
        x, y = int(x), int(y)
        d = math.gcd(x, y)
        g.append(d)
        l.append(x // d * y if d else 0)
    return {"a": args["a"], "b": args["b"], "g": u32_array(g), "l": u32_array(l)}
