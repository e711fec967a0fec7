"""vec_add_f32: c = a + b in float32 with edge values (signed zeros, subnormals, the
largest finite values, infinities): numpy's float32 addition is the oracle; a NaN result
is the GPU's canonical 0x7fffffff."""
import numpy as np

KERNEL = "vec_add_f32"
EDGES = np.array([0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, 3.4028235e38, np.inf, 1.0],
                 np.float32)


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(16) * 1e3).astype(np.float32)
    b = (rng.standard_normal(16) * 1e3).astype(np.float32)
    a[:8], b[:8] = EDGES, EDGES[::-1] * -1
    return {"grid": grid, "block": block,
            "args": {"a": a, "b": b, "c": np.zeros(16, np.float32), "n": n}}


LAUNCHES = [_launch(1, 16, 16, 330), _launch(4, 4, 14, 331)]


def oracle(args, grid, block):
    n = args["n"]
    with np.errstate(all="ignore"):
        c = args["a"][:n] + args["b"][:n]
    bits = c.view(np.uint32).copy()
    bits[np.isnan(c)] = 0x7FFFFFFF       # the GPU's canonical NaN
    out = np.zeros(16, np.uint32)
    out[:n] = bits
    return {"a": args["a"], "b": args["b"], "c": out.view(np.float32)}
