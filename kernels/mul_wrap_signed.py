"""mul_wrap_signed: int products beyond 32 bits wrap (via unsigned), then signed tests."""
import numpy as np

from qgpu.suite import i32, i32_array

KERNEL = "mul_wrap_signed"

_A = [65536, -65536, 46341, 2147483647, -2147483648, 7, -3, 100000, 0, 123456789]
_B = [65536, 65536, 46341, 2, -1, -9, -11, 100000, 5, 987654321]


def _launch(block, a, b):
    return {"grid": 1, "block": block, "args": {
        "a": i32_array(a), "b": i32_array(b), "prod": np.zeros(len(a), dtype=np.int32),
        "neg": np.zeros(len(a), dtype=np.int32)}}


LAUNCHES = [_launch(10, _A, _B), _launch(4, _A[6:], _B[:4])]


def oracle(args, grid, block):
    prods = [i32(int(x) * int(y)) for x, y in zip(args["a"], args["b"], strict=True)]
    return {"a": args["a"], "b": args["b"], "prod": i32_array(prods),
            "neg": i32_array([(p > 0) - (p < 0) for p in prods])}
