"""constant_table: nibble substitution through a __constant__ table (the PRESENT cipher's
S-box) and weights from an initialised __device__ array."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "constant_table"

_SBOX = [0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2]
_WEIGHT = [3, -1, 4, -5]


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    n = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, n, dtype=np.uint32), "out": np.zeros(n, np.uint32),
        "weighted": np.zeros(n, np.int32)}}


LAUNCHES = [_launch(1, 8, 510), _launch(2, 5, 511)]


def oracle(args, grid, block):
    out, weighted = [], []
    for i, x in enumerate(int(v) for v in args["in"]):
        out.append(sum(_SBOX[(x >> k) & 0xF] << k for k in range(0, 32, 4)))
        weighted.append((x & 0xFF) * _WEIGHT[i & 3])
    return {"in": args["in"], "out": u32_array(out),
            "weighted": np.array(weighted, np.int32)}
