"""vec_add_wrap_u32: unsigned a + b and a - b that overflow and wrap around 2^32."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "vec_add_wrap_u32"

_A = [0xFFFFFFFF, 0x80000000, 1, 0, 0x7FFFFFFF, 12345, 0xFFFF0000, 3]
_B = [1, 0x80000000, 0xFFFFFFFF, 1, 1, 0xDEADBEEF, 0x00010000, 5]


def _launch(grid, block, a, b):
    n = len(a)
    return {"grid": grid, "block": block, "args": {
        "a": u32_array(a), "b": u32_array(b),
        "sum": np.zeros(n, dtype=np.uint32), "diff": np.zeros(n, dtype=np.uint32)}}


LAUNCHES = [_launch(1, 8, _A, _B), _launch(2, 4, _A[::-1], _B)]


def oracle(args, grid, block):
    a = [int(x) for x in args["a"]]
    b = [int(x) for x in args["b"]]
    return {"a": args["a"], "b": args["b"],
            "sum": u32_array([x + y for x, y in zip(a, b, strict=True)]),
            "diff": u32_array([x - y for x, y in zip(a, b, strict=True)])}
