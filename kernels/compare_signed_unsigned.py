"""compare_signed_unsigned: <, <=, >, >=, ==, != signed and unsigned, packed per pair."""
import numpy as np

from qgpu.suite import i32_array, u32

KERNEL = "compare_signed_unsigned"

_A = [0, -1, 1, -2147483648, 2147483647, 5, -5, 3, -1, 0, 100, -100]
_B = [0, 1, -1, 2147483647, -2147483648, 5, -6, 4, -1, -2147483648, -100, 100]


def _launch(grid, block, a, b):
    return {"grid": grid, "block": block, "args": {
        "a": i32_array(a), "b": i32_array(b), "bits": np.zeros(len(a), np.int32)}}


LAUNCHES = [_launch(1, 12, _A, _B), _launch(2, 4, _B[:8], _A[4:])]


def oracle(args, grid, block):
    out = []
    for x, y in zip(args["a"], args["b"], strict=True):
        x, y = int(x), int(y)
        ux, uy = u32(x), u32(y)
        flags = [x < y, x <= y, x > y, x >= y, x == y, x != y, ux < uy, ux <= uy, ux > uy,
                 ux >= uy]
        out.append(sum(int(f) << k for k, f in enumerate(flags)))
    return {"a": args["a"], "b": args["b"], "bits": np.array(out, np.int32)}
