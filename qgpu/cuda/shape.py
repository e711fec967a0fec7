"""cuda.shape: CUDA launch shapes (dim3 grids and blocks) on a machine with linear ids.

The machine numbers threads and CTAs linearly (its tid and ctaid); CUDA's threadIdx,
blockIdx, blockDim and gridDim are three-dimensional, linearised x fastest (a block's
thread (x, y, z) is thread x + y * bx + z * bx * by, and warps are cut from that order).
This module owns parsing a launch's grid and block (ints, tuples, dim3-like objects),
checking their totals against the machine, and the operations that compute
threadIdx.{x,y,z} and blockIdx.{x,y,z} from the linear ids for one shape (lower.py asks
for them when a kernel is lowered for a 2-D/3-D launch; a 1-D launch keeps the plain
ids, .y/.z reading 0 as on a GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from qgpu.errors import LaunchError
from qgpu.isa import Imm, limits

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Shape:
    grid: Dim3
    block: Dim3

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def linear(self) -> bool:
        """A 1-D launch: the machine's own ids are threadIdx.x and blockIdx.x."""
        return self.grid[1:] == (1, 1) and self.block[1:] == (1, 1)

    def __str__(self) -> str:
        def f(d: Dim3) -> str:
            return ",".join(map(str, d[:max(i + 1 for i in range(3) if d[i] != 1 or i == 0)]))
        return f"grid ({f(self.grid)}) x block ({f(self.block)})"


def dim3(value, what: str) -> Dim3:
    """(x, y, z) from an int, a tuple/list of 1-3 ints (CuPy's style) or an object with
    .x/.y/.z."""
    if hasattr(value, "x") and not isinstance(value, int | np.integer):
        value = (value.x, getattr(value, "y", 1), getattr(value, "z", 1))
    items = list(value) if isinstance(value, tuple | list) else [value]
    if not 1 <= len(items) <= 3:
        raise LaunchError(f"{what} {value!r}: {len(items)} dimensions; a launch has 1 to 3 "
                          "(x, y, z)")
    if any(isinstance(v, bool) or not isinstance(
            v, int | np.integer) for v in items):
        raise LaunchError(f"{what} {value!r}: every dimension must be an int (give an int "
                          "or a tuple of 1 to 3 ints (x, y, z))")
    items = [int(v) for v in items] + [1] * (3 - len(items))
    if any(v < 1 for v in items):
        raise LaunchError(f"{what} {tuple(items)}: every dimension must be at least 1")
    return items[0], items[1], items[2]


def launch_shape(grid, block) -> Shape:
    """The launch's shape; LaunchError unless its totals fit the machine."""
    shape = grid if isinstance(grid, Shape) else Shape(dim3(grid, "grid"), dim3(block, "block"))
    try:
        limits.check_launch_shape(shape.ctas, shape.threads)
    except LaunchError as exc:
        if shape.linear:
            raise
        raise LaunchError(f"{shape} ({shape.ctas} CTAs of {shape.threads} threads): "
                          f"{exc}") from None
    return shape


def parse_dims(text: str, what: str) -> Dim3:
    """A command line's --grid/--block: "4", "2,2" or "2x2x1"."""
    parts = text.replace("x", ",").split(",")
    if len(parts) > 3:
        raise LaunchError(f"--{what} '{text}': {len(parts)} dimensions; give at most 3 "
                          "(x,y,z), e.g. 4 or 2,2")
    try:
        values = tuple(int(p.strip(), 0) for p in parts)
    except ValueError:
        raise LaunchError(f"--{what} '{text}': give 1 to 3 integers, e.g. 4 or 2,2") from None
    return dim3(values, f"--{what}")


# Division of an id v < bound by a launch constant d: q = (v * m) >> s with
# m = ceil(2^s / d) is exact when (bound - 1) * (m * d - 2^s) < 2^s (the error term stays
# under one quotient step) and (bound - 1) * m < 2^32 (the product fits a word). s = 8 is
# tried first: the ids of small launches (below 16) keep the code they always had.
def _magic(d: int, bound: int) -> tuple[int, int]:
    for s in (8, *range(1, 32)):
        m = -(-(1 << s) // d)
        if (bound - 1) * (m * d - (1 << s)) < 1 << s and (bound - 1) * m < 1 << 32:
            return m, s
    raise LaunchError(f"a 2-D/3-D launch of {bound} CTAs with a dimension of {d}: its "
                      f"blockIdx cannot be computed exactly with one 32-bit multiply (exact "
                      f"up to 4,096 CTAs, or with power-of-two dimensions)")


def _div(emit: Callable, tmp: Callable, v, d: int, bound: int):
    if d == 1:
        return v
    q = tmp()
    if d & (d - 1) == 0:
        emit("shr.u", q, v, Imm(d.bit_length() - 1))
        return q
    m, shift = _magic(d, bound)
    t = tmp()
    emit("mul", t, v, Imm(m))
    emit("shr.u", q, t, Imm(shift))
    return q


def _mod(emit: Callable, tmp: Callable, v, d: int, bound: int):
    """v % d for v < bound."""
    if bound <= d:
        return v
    if d == 1:
        return Imm(0)
    r = tmp()
    if d & (d - 1) == 0:
        emit("and", r, v, Imm(d - 1))
        return r
    q, t = _div(emit, tmp, v, d, bound), tmp()
    emit("mul", t, q, Imm(d))
    emit("sub", r, v, t)
    return r


def special(name: str, shape: Shape, emit: Callable, tmp: Callable):
    """The value of %tid.*, %ctaid.*, %ntid.*, %nctaid.* for a launch of `shape`, as an
    Imm or a V computed by emit(op, dst, *srcs); None for other registers."""
    kind, _, axis = name.lstrip("%").partition(".")
    if kind not in ("tid", "ctaid", "ntid", "nctaid") or axis not in ("x", "y", "z"):
        return None
    k = "xyz".index(axis)
    dims = shape.block if kind in ("tid", "ntid") else shape.grid
    if kind.startswith("n"):
        return Imm(dims[k])
    lin = tmp()
    emit(kind, lin)
    total = dims[0] * dims[1] * dims[2]
    below = 1
    for j in range(k):
        below *= dims[j]
    q = _div(emit, tmp, lin, below, total)
    return _mod(emit, tmp, q, dims[k], -(-total // below))
