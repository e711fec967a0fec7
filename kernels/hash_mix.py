"""hash_mix: murmur3 fmix32 and FNV-1a over the bytes of each word (wrapping multiplies)."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "hash_mix"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, size, dtype=np.uint32),
        "fmix": np.zeros(size, np.uint32), "fnv": np.zeros(size, np.uint32)}}


LAUNCHES = [_launch(1, 8, 330), _launch(2, 7, 331)]

_M = 0xFFFFFFFF


def _fmix(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    return h ^ (h >> 16)


def _fnv1a(x):
    f = 2166136261
    for byte in x.to_bytes(4, "little"):
        f = ((f ^ byte) * 16777619) & _M
    return f


def oracle(args, grid, block):
    xs = [int(x) for x in args["in"]]
    return {"in": args["in"], "fmix": u32_array([_fmix(x) for x in xs]),
            "fnv": u32_array([_fnv1a(x) for x in xs])}
