"""vote_any_all: any/all/ballot over one warp per CTA (blockDim <= 4: warp-size
independent)."""
import numpy as np

KERNEL = "vote_any_all"


def _launch(grid, block, values):
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": np.array(values, np.int32), "any_pos": np.zeros(size, np.int32),
        "all_pos": np.zeros(size, np.int32), "any_zero": np.zeros(size, np.int32),
        "ballot": np.zeros(size, np.uint32)}}


LAUNCHES = [_launch(1, 4, [1, 2, 3, 4]), _launch(1, 3, [-1, 0, 5]),
            _launch(4, 4, [1, 1, 1, 1, -1, -2, -3, -4, 0, 0, 0, 0, 3, -3, 0, 7]),
            _launch(3, 2, [5, 6, -5, 7, 0, 0])]


def oracle(args, grid, block):
    out = {"any_pos": [], "all_pos": [], "any_zero": [], "ballot": []}
    for c in range(grid):
        warp = [int(v) for v in args["in"][c * block:(c + 1) * block]]
        ballot = sum((v & 1) << k for k, v in enumerate(warp))
        for _ in warp:
            out["any_pos"].append(int(any(v > 0 for v in warp)))
            out["all_pos"].append(int(all(v > 0 for v in warp)))
            out["any_zero"].append(10 if any(v == 0 for v in warp) else 20)
            out["ballot"].append(ballot)
    result = {k: np.array(v, np.int32) for k, v in out.items()}
    result["ballot"] = result["ballot"].astype(np.uint32)
    return {"in": args["in"], **result}
