"""div_by_constants: signed and unsigned division/remainder by constants (mulhi, shifts,
the round-toward-zero fix-up for negative dividends)."""
import numpy as np

from qgpu.suite import c_div, c_rem, i32_array, u32, u32_array

KERNEL = "div_by_constants"

_A = [0, 1, -1, 17, -17, 2147483647, -2147483648, 100, -100, 15, -15, -16, 16, 7, -8, 99]


def _launch(block, values):
    return {"grid": 1, "block": block, "args": {
        "a": i32_array(values), "s": np.zeros(5 * block, np.int32),
        "u": np.zeros(3 * block, np.uint32)}}


_RANDOM = list(np.random.default_rng(280).integers(-2**31, 2**31 - 1, 8))
LAUNCHES = [_launch(8, _A[:8]), _launch(8, _A[8:]), _launch(8, _RANDOM)]


def oracle(args, grid, block):
    s, u = [], []
    for x in (int(v) for v in args["a"]):
        s += [c_div(x, 3), c_rem(x, 7), c_div(x, -5), c_div(x, 16), c_rem(x, 8)]
        ux = u32(x)
        u += [ux // 10, ux % 10, ux // 7]
    return {"a": args["a"], "s": i32_array(s), "u": u32_array(u)}
