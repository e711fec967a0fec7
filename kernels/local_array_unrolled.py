"""local_array_unrolled: a 4-element local array with constant indices only (unrolled
loops): window sums over in[t..t+3] (zero past n) and a sorting network of the window."""
import numpy as np

KERNEL = "local_array_unrolled"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    threads = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-100, 100, n, dtype=np.int32),
        "window_sum": np.zeros(threads, np.int32), "sorted": np.zeros(4 * threads, np.int32),
        "n": n}}


LAUNCHES = [_launch(1, 8, 10, 520), _launch(2, 4, 8, 521), _launch(1, 3, 3, 522)]


def oracle(args, grid, block):
    n = args["n"]
    padded = list(args["in"][:n].astype(np.int64)) + [0] * 4
    sums, srt = [], []
    for t in range(grid * block):
        window = [int(v) for v in padded[t:t + 4]] if t < n else [0] * 4
        window += [0] * (4 - len(window))
        sums.append(sum(window))
        srt += sorted(window)
    return {"in": args["in"], "window_sum": np.array(sums, np.int32),
            "sorted": np.array(srt, np.int32)}
