"""bit_masks: lowest set bit, clear lowest, is-power-of-two, next power of two, field
extract and insert."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "bit_masks"

_VALUES = [0, 1, 2, 3, 5, 64, 100, 0x80000000, 0x7FFFFFFF, 0x12345678, 0xABCD, 1000000]


def _launch(block):
    return {"grid": 1, "block": block, "args": {
        "in": u32_array(_VALUES[:block]), "out": np.zeros(6 * block, np.uint32)}}


LAUNCHES = [_launch(12), _launch(5)]


def _next_pow2(x):
    return 1 << (x - 1).bit_length() if x > 0 else 0


def oracle(args, grid, block):
    out = []
    for x in (int(v) for v in args["in"]):
        out += [x & -x, x & (x - 1), int(x != 0 and x & (x - 1) == 0), _next_pow2(x),
                (x >> 5) & 0x3FF, (x & ~(0xFF << 12)) | ((x & 0xFF) << 12)]
    return {"in": args["in"], "out": u32_array(out)}
