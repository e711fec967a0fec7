"""divmod_unsigned: unsigned a / b and a % b with large dividends and divisors."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "divmod_unsigned"

_A = [7, 0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 0, 100, 0xFFFFFFFE, 12345678, 5, 1 << 31]
_B = [2, 1, 0xFFFFFFFF, 3, 9, 100, 0x80000000, 1000, 0xFFFFFFFF, 0x7FFFFFFF]


def _launch(grid, block, a, b):
    return {"grid": grid, "block": block, "args": {
        "a": u32_array(a), "b": u32_array(b), "q": np.zeros(len(a), np.uint32),
        "r": np.zeros(len(a), np.uint32)}}


LAUNCHES = [_launch(1, 10, _A, _B), _launch(2, 3, _A[4:], _B[:6])]


def oracle(args, grid, block):
    pairs = [(int(x), int(y)) for x, y in zip(args["a"], args["b"], strict=True)]
    return {"a": args["a"], "b": args["b"], "q": u32_array([x // y for x, y in pairs]),
            "r": u32_array([x % y for x, y in pairs])}
