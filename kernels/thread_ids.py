"""thread_ids: threadIdx, blockIdx, blockDim, gridDim packed per thread; all shapes."""
import numpy as np

KERNEL = "thread_ids"

LAUNCHES = [{"grid": g, "block": b, "args": {"out": np.full(g * b, -1, dtype=np.int32)}}
            for g, b in [(1, 1), (1, 16), (2, 5), (4, 4), (3, 3), (2, 8)]]


def oracle(args, grid, block):
    out = [(grid << 24) | (block << 16) | (c << 8) | t for c in range(grid)
           for t in range(block)]
    return {"out": np.array(out, dtype=np.int32)}
