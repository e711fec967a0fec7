"""abs_neg_minmax: abs, -x, min(x, bound), max(x, bound) for signed ints (no INT_MIN)."""
import numpy as np

from qgpu.suite import i32_array

KERNEL = "abs_neg_minmax"

_A = [0, 1, -1, 17, -17, 2147483647, -2147483647, 1000, -1000, 5, 6, -6]


def _launch(block, bound):
    return {"grid": 1, "block": block, "args": {
        "a": i32_array(_A[:block]), "out": np.zeros(4 * block, dtype=np.int32),
        "bound": bound}}


LAUNCHES = [_launch(12, 5), _launch(7, -20), _launch(4, 0)]


def oracle(args, grid, block):
    out = []
    for x in args["a"][:block]:
        x = int(x)
        out += [abs(x), -x, min(x, args["bound"]), max(x, args["bound"])]
    return {"a": args["a"], "out": i32_array(out)}
