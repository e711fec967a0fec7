"""divmod_signed: int a / b and the remainder, every sign combination, no b == 0 and no
INT_MIN / -1 (undefined in C)."""
import numpy as np

from qgpu.suite import c_div, c_rem, i32_array

KERNEL = "divmod_signed"

_A = [7, -7, 7, -7, 0, 1, -1, 2147483647, -2147483648, -2147483648, 100, -100, 5, 3,
      123456789, -987654321]
_B = [2, 2, -2, -2, 5, -1, 3, -1, 1, 2, 7, 7, 10, 3, -1000, 12345]


def _launch(grid, block, a, b):
    return {"grid": grid, "block": block, "args": {
        "a": i32_array(a), "b": i32_array(b), "q": np.zeros(len(a), np.int32),
        "r": np.zeros(len(a), np.int32)}}


LAUNCHES = [_launch(1, 16, _A, _B), _launch(2, 4, _A[8:], _B[:8])]


def oracle(args, grid, block):
    pairs = [(int(x), int(y)) for x, y in zip(args["a"], args["b"], strict=True)]
    return {"a": args["a"], "b": args["b"],
            "q": i32_array([c_div(x, y) for x, y in pairs]),
            "r": i32_array([c_rem(x, y) for x, y in pairs])}
