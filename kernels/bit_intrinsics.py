"""bit_intrinsics: __popc, __clz (32 for 0), __brev and ffs = 32 - clz(x & -x)."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "bit_intrinsics"


def _launch(grid, block, values):
    n = len(values)
    return {"grid": grid, "block": block, "args": {
        "in": u32_array(values), "popc": np.zeros(n, np.int32), "clz": np.zeros(n, np.int32),
        "brev": np.zeros(n, np.uint32), "ffs": np.zeros(n, np.int32)}}


LAUNCHES = [_launch(1, 8, [0, 1, 2, 0x80000000, 0xFFFFFFFF, 0x00F00000, 0x12345678, 96]),
            _launch(2, 5, list(np.random.default_rng(300).integers(0, 2**32, 10)))]


def oracle(args, grid, block):
    xs = [int(x) for x in args["in"]]
    return {"in": args["in"],
            "popc": np.array([bin(x).count("1") for x in xs], np.int32),
            "clz": np.array([32 - x.bit_length() for x in xs], np.int32),
            "brev": u32_array([int(f"{x:032b}"[::-1], 2) for x in xs]),
            "ffs": np.array([(x & -x).bit_length() for x in xs], np.int32)}
