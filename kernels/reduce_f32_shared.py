"""reduce_f32_shared: a shared-memory tree sum of floats per CTA (blockDim a power of
two); the oracle runs the same tree in float32."""
import numpy as np

KERNEL = "reduce_f32_shared"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(grid * block) * 10.0 ** rng.integers(-2, 3, grid * block))
    return {"grid": grid, "block": block, "args": {
        "in": x.astype(np.float32), "sums": np.zeros(4, np.float32)}}


LAUNCHES = [_launch(1, 16, 320), _launch(2, 8, 321), _launch(4, 4, 322)]


def oracle(args, grid, block):
    x = args["in"]
    sums = np.zeros(4, np.float32)
    for c in range(grid):
        s = x[c * block:(c + 1) * block].copy()
        stride = block // 2
        while stride:
            s[:stride] = s[:stride] + s[stride:2 * stride]
            stride //= 2
        sums[c] = s[0]
    return {"in": x, "sums": sums}
