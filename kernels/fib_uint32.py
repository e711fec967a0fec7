"""fib_uint32: Fibonacci mod 2^32 (int32_t/uint32_t types) and an unsigned count-down."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "fib_uint32"


def _launch(grid, block, ks):
    return {"grid": grid, "block": block, "args": {
        "k": np.array(ks, np.int32), "fib": np.zeros(len(ks), np.uint32),
        "down": np.zeros(len(ks), np.int32)}}


LAUNCHES = [_launch(1, 8, [0, 1, 2, 10, 20, 47, 48, 100]), _launch(2, 3, [5, 0, 93, 7, 1, 60])]


def _fib(k):
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


def oracle(args, grid, block):
    ks = [int(k) for k in args["k"]]
    return {"k": args["k"], "fib": u32_array([_fib(k) for k in ks]),
            "down": np.array([2 * k for k in ks], np.int32)}
