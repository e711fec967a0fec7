"""atomic_inc_dec: atomicInc ((old >= limit) ? 0 : old + 1) and atomicDec
((old == 0 || old > limit) ? limit : old - 1), once per thread; the end state after n
steps is the same in any order."""
import numpy as np

KERNEL = "atomic_inc_dec"


def _launch(grid, block, start_inc, start_dec, limit):
    return {"grid": grid, "block": block, "args": {
        "inc": np.array([start_inc], np.uint32), "dec": np.array([start_dec], np.uint32),
        "limit": limit}}


LAUNCHES = [_launch(1, 16, 0, 0, 5), _launch(4, 4, 3, 2, 6), _launch(2, 3, 9, 9, 4),
            _launch(1, 7, 0, 100, 1000)]


def oracle(args, grid, block):
    inc, dec, limit = int(args["inc"][0]), int(args["dec"][0]), args["limit"]
    for _ in range(grid * block):
        inc = 0 if inc >= limit else inc + 1
        dec = limit if dec == 0 or dec > limit else dec - 1
    return {"inc": np.array([inc], np.uint32), "dec": np.array([dec], np.uint32)}
