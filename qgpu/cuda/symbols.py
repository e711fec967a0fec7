"""cuda.symbols: host data as the machine's words. An array argument's words
(`to_words`, `from_words`: little-endian, so a big-endian '>i4' array is placed and read
back by value), and the bytes `Module.set_symbol` (`qgpu run --symbol`) stores in a
__constant__ or __device__ variable, as cudaMemcpyToSymbol copies a host array.

A numpy array gives its bytes in the machine's (little-endian) byte order; a list of
numbers is stored as the variable's element type from the source (signature.
variable_elements: PTX declares most arrays as bytes): a float table's values as float32
(inf and nan as they are, a finite value beyond float32's range refused), an integer
table's values checked against the type's range as `--arg` checks them; a variable of
another type (a struct) takes 32-bit integers. At most the variable's size.
"""

from __future__ import annotations

import numpy as np

from qgpu.cuda.launch_args import check_value
from qgpu.errors import LaunchError
from qgpu.isa import limits


def little_endian(dtype: np.dtype) -> np.dtype:
    """`dtype` in the machine's byte order (a big-endian '>i4' array is placed by value)."""
    return dtype.newbyteorder("<") if dtype.byteorder == ">" or (
        dtype.byteorder == "=" and not np.little_endian) else dtype


def words_of(a: np.ndarray) -> int:
    """Words of global memory an array takes (its bytes, rounded up to whole words)."""
    return -(-a.nbytes // 4)


def to_words(a: np.ndarray) -> list[int]:
    data = a.astype(little_endian(a.dtype), copy=False).tobytes().ljust(4 * words_of(a), b"\0")
    return [int(x) for x in np.frombuffer(data, dtype="<u4")]


def from_words(words: list[int], a: np.ndarray) -> np.ndarray:
    """An array like `a` from the words that hold it."""
    data = np.array(words, dtype="<u4").tobytes()[:a.nbytes]
    return np.frombuffer(data, dtype=little_endian(a.dtype)).astype(a.dtype).reshape(a.shape)


def symbol_data(variables, elements: dict, filename: str, name: str, values,
                what: str) -> bytes:
    """The variable's bytes for `values` (errors start with `what`: the API's name, qgpu
    run's `--symbol NAME`). variables: the PTX module's; elements: variable_elements."""
    var = next((v for v in variables if v.name == name and v.space in ("global", "const")),
               None)
    if var is None:
        known = [v.name for v in variables if v.space in ("global", "const")]
        raise LaunchError(f"{filename}: no __constant__ or __device__ variable "
                          f"'{name}' (variables: {', '.join(known) or 'none'})")
    if isinstance(values, np.ndarray):
        values = values.astype(little_endian(values.dtype), copy=False)
    else:
        values = _numbers(values, elements.get(name), what)
    data = values.tobytes()
    if len(data) > var.size:
        raise LaunchError(f"{what}: {len(data)} bytes given; the variable holds {var.size}")
    return data.ljust(var.size, b"\0")


def _numbers(values, element: tuple[str, str] | None, what: str) -> np.ndarray:
    """A list of numbers as the element type (dtype, C type), or as 32-bit words."""
    dtype, kind = (np.dtype(element[0]), f"{element[1]} elements") if element else \
        (None, "32-bit elements")
    floats = dtype is not None and dtype.kind == "f"
    try:
        items = list(values)
    except TypeError:
        raise LaunchError(f"{what}: values must be a numpy array or a list of numbers, not "
                          f"{type(values).__name__}") from None
    for v in items:
        integer = isinstance(v, int | np.integer)
        if not (integer or floats and isinstance(v, float | np.floating)):
            raise LaunchError(f"{what}: values must be {'numbers' if floats else 'integers'} "
                              f"({kind}), got {v!r}")
        if dtype is not None:
            check_value(float(v) if floats else int(v), dtype, what, kind, LaunchError)
        elif not -(1 << 31) <= int(v) < 1 << 32:
            raise LaunchError(f"{what}: {int(v)} does not fit 32 bits ({kind})")
    if dtype is None:
        return np.array([limits.u32(int(v)) for v in items], dtype="<u4")
    return np.array(items, dtype=little_endian(dtype))
