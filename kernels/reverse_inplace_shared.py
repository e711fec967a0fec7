"""reverse_inplace_shared: each CTA reverses its own segment of data in place."""
import numpy as np

KERNEL = "reverse_inplace_shared"


def _launch(grid, block):
    return {"grid": grid, "block": block, "args": {
        "data": np.arange(grid * block, dtype=np.int32) * 7 - 20}}


LAUNCHES = [_launch(1, 16), _launch(2, 7), _launch(4, 4)]


def oracle(args, grid, block):
    return {"data": args["data"].reshape(grid, block)[:, ::-1].ravel()}
