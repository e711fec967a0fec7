"""minmax_unsigned: min/max of the same bits read as unsigned and as signed."""
import numpy as np

from qgpu.suite import i32, i32_array, u32_array

KERNEL = "minmax_unsigned"

_A = [0xFFFFFFFF, 1, 0x80000000, 0x7FFFFFFF, 5, 0, 0xFFFFFFFE, 100]
_B = [1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 5, 0x80000001, 0xFFFFFFFF, 99]


def _launch(block):
    return {"grid": 1, "block": block, "args": {
        "a": u32_array(_A[:block]), "b": u32_array(_B[:block]),
        "umin": np.zeros(block, dtype=np.uint32), "umax": np.zeros(block, dtype=np.uint32),
        "smin": np.zeros(block, dtype=np.int32), "smax": np.zeros(block, dtype=np.int32)}}


LAUNCHES = [_launch(8), _launch(5)]


def oracle(args, grid, block):
    a = [int(x) for x in args["a"]]
    b = [int(x) for x in args["b"]]
    pairs = list(zip(a, b, strict=True))
    return {"a": args["a"], "b": args["b"],
            "umin": u32_array([min(x, y) for x, y in pairs]),
            "umax": u32_array([max(x, y) for x, y in pairs]),
            "smin": i32_array([min(i32(x), i32(y)) for x, y in pairs]),
            "smax": i32_array([max(i32(x), i32(y)) for x, y in pairs])}
