"""int_intrinsics: __mulhi/__umulhi (high words of 64-bit products), __ffs, __sad/__usad
(|x - y| + z), __mul24/__umul24 (products of the low 24 bits, sign- or zero-extended)."""
import numpy as np

from qgpu.suite import i32, i32_array, u32, u32_array

KERNEL = "int_intrinsics"

_A = [0, 1, -1, 2147483647, -2147483648, 123456789, -98765, 0x00FFFFFF, 0x00800000, 96]
_B = [5, -1, -1, 2147483647, 3, -987654321, 4321, 2, 0x00800000, -7]


def _launch(grid, block, a, b):
    n = len(a)
    return {"grid": grid, "block": block, "args": {
        "a": i32_array(a), "b": i32_array(b), "s": np.zeros(4 * n, np.int32),
        "u": np.zeros(3 * n, np.uint32)}}


LAUNCHES = [_launch(1, 10, _A, _B), _launch(2, 3, _B[:6], _A[4:])]


def _low24_signed(v):
    v &= 0xFFFFFF
    return v - (1 << 24) if v & 0x800000 else v


def oracle(args, grid, block):
    s, u = [], []
    for x, y in zip(args["a"], args["b"], strict=True):
        x, y = int(x), int(y)
        ux, uy = u32(x), u32(y)
        s += [(x * y) >> 32, (x & -x).bit_length(), abs(x - y) + 7,
              i32(_low24_signed(x) * _low24_signed(y))]
        u += [(ux * uy) >> 32, abs(ux - uy) + 1, (ux & 0xFFFFFF) * (uy & 0xFFFFFF)]
    return {"a": args["a"], "b": args["b"], "s": i32_array(s), "u": u32_array(u)}
