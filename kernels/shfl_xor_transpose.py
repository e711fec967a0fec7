"""shfl_xor_transpose: lane j of each group receives column j of a 4x4 block through xor
shuffles (lane ^ c); the received elements are packed base 100 in the order of c."""
import numpy as np

KERNEL = "shfl_xor_transpose"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    groups = grid * block // 4
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 100, 16 * groups, dtype=np.int32),
        "out": np.zeros(4 * groups, np.int32)}}


LAUNCHES = [_launch(1, 4, 420), _launch(2, 4, 421), _launch(1, 8, 422)]


def oracle(args, grid, block):
    out = []
    for g in range(grid * block // 4):
        m = args["in"][16 * g:16 * g + 16].reshape(4, 4)
        for lane in range(4):
            acc = 0
            for c in range(4):
                # lane (lane ^ c) offers m[lane ^ c][(lane ^ c) ^ c] = m[lane ^ c][lane]
                acc = acc * 100 + int(m[lane ^ c][lane])
            out.append(acc)
    return {"in": args["in"], "out": np.array(out, np.int32)}
