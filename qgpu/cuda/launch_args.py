"""cuda.launch_args: a launch described in words, for every host that takes one so: the
kernel to launch (`--kernel`, or the module's only kernel) and its arguments from
NAME=VALUE strings (`qgpu run --arg`, chat's `/run` lines and `// launch:` comments).

A pointer parameter takes comma-separated values (the array's initial contents) or
zeros:N, as an array of the parameter's element type (an `unsigned char *` takes uint8
values, a `short *` int16, an `int *` int32); a type prefix names another one of the same
width, or the element layout of a struct or void pointer: `u8:1,2,3`, `i16:zeros:4`,
`u32:...` (i8 u8 i16 u16 i32 u32 f32 bool). An integer parameter takes one integer
(decimal, 0x.., 0o.., 0b..). `parse_arg_sets`: several launches, an --arg given once
shared by all, one given k times making k launches (`qgpu run`)."""

from __future__ import annotations

import math

import numpy as np

from qgpu.errors import QgpuError
from qgpu.isa import limits


class LaunchArgumentError(QgpuError):
    """A kernel or argument named in words that the launch cannot take (one line)."""


def pick_kernel(module, name: str | None):
    """module's kernel `name`, or its only kernel when name is None."""
    names = module.kernel_names
    if name is None:
        if len(names) != 1:
            raise LaunchArgumentError(f"{module.filename} has {len(names)} kernels "
                                      f"({', '.join(names) or 'none'}); choose one with "
                                      "--kernel")
        name = names[0]
    return module.get_function(name)


def parse_args(kernel, pairs: list[str]) -> dict:
    """Launch arguments by parameter name, from NAME=VALUE strings (each name once)."""
    given = _given(kernel, pairs)
    twice = next((n for n, v in given.items() if len(v) > 1), None)
    if twice:
        raise LaunchArgumentError(f"--arg {twice} given twice")
    return _launch(kernel, given, 0)


def parse_arg_sets(kernel, pairs: list[str]) -> list[dict]:
    """Several launches' arguments (`qgpu run` with an --arg repeated): a parameter given
    once applies to every launch, one given k times makes k launches, its i-th value the
    i-th launch's (every repeated parameter must be given the same number of times).
    Each launch gets arrays of its own. One launch: parse_args's result in a list."""
    given = _given(kernel, pairs)
    counts = sorted({len(v) for v in given.values()} - {1})
    if len(counts) > 1:
        repeated = ", ".join(f"{n} {len(v)} times" for n, v in given.items() if len(v) > 1)
        raise LaunchArgumentError(f"--arg given different numbers of times ({repeated}): "
                                  "a parameter takes one value for every launch, or one "
                                  "value per launch")
    return [_launch(kernel, given, i) for i in range(counts[0] if counts else 1)]


def set_symbols(module, pairs: list[str]) -> None:
    """`qgpu run --symbol NAME=VALUES`: each variable filled with comma-separated numbers
    of its element type (a float table takes decimal numbers, inf and nan; an integer
    table integers in its type's range), as Module.set_symbol stores them."""
    for pair in pairs:
        name, eq, text = pair.partition("=")
        name, what = name.strip(), f"--symbol {name.strip()}"
        if not eq:
            raise LaunchArgumentError(f"--symbol '{pair}': expected NAME=VALUES")
        element = module.symbol_element(name)
        items = text.split(",") if text.strip() else []
        if element and element[0] == "float32":
            values = [_float(t, what, "float elements") for t in items]
        else:
            values = [_int(t, what) for t in items]
        module.set_symbol(name, values, what)


def _given(kernel, pairs: list[str]) -> dict[str, list[str]]:
    """The values given per parameter name, every parameter given at least once."""
    params = [p.name for p in kernel.params]      # in order: the error lists them
    given: dict[str, list[str]] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        name = name.strip()
        if not eq:
            raise LaunchArgumentError(f"--arg '{pair}': expected NAME=VALUE")
        if name not in params:
            raise LaunchArgumentError(f"--arg {name}: {kernel.name} has no parameter "
                                      f"'{name}' (parameters: {', '.join(params) or 'none'})")
        given.setdefault(name, []).append(value)
    missing = [p.name for p in kernel.params if p.name not in given]
    if missing:
        raise LaunchArgumentError(f"missing --arg for {', '.join(missing)} "
                                  f"({kernel.signature})")
    return given


def _launch(kernel, given: dict[str, list[str]], i: int) -> dict:
    """Launch i's arguments: a value given once serves every launch."""
    return {p.name: (_array if p.pointer else _scalar)(p, v[i if len(v) > 1 else 0])
            for p in kernel.params for v in [given[p.name]]}


def _scalar(param, text: str):
    """An integer (a bool parameter also takes true/false, a float one a decimal number,
    inf or nan, rounded to float32 as a C literal `2.5f` is; one beyond float32's range
    is refused)."""
    if param.dtype == "bool" and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    if param.dtype == "float32":
        return _float(text, f"--arg {param.name}", f"{param.ctype} parameter")
    return _int(text, f"--arg {param.name}")    # its range: the API's check (Kernel)


def _int(text: str, what: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise LaunchArgumentError(f"{what}: '{text}' is not an integer") from None


_NOT_FINITE = ("inf", "infinity", "nan")


def _float(text: str, what: str, kind: str) -> float:
    """A float32 value from its decimal text: inf and nan as they are, a finite number
    that rounds beyond float32's range refused (1e400, 1e39)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise LaunchArgumentError(f"{what}: '{text}' is not a number ({kind})") from None
    spelled = text.strip().lower().lstrip("+-") in _NOT_FINITE
    if not spelled and not np.isfinite(_rounded32(value)):
        raise LaunchArgumentError(f"{what}: {text.strip()} overflows float32 (largest "
                                  f"finite {FLOAT32_MAX:.7g}; write inf for infinity)")
    return value


FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_value(value, dtype: np.dtype, what: str, kind: str, error=LaunchArgumentError):
    """`value` (a Python number) fits an element of `dtype`, or `error` names it: an
    integer within the type's range (bool: 0 or 1), a float within float32's finite range
    unless it is inf or nan itself."""
    if dtype.kind == "f":
        if math.isfinite(value) and not np.isfinite(_rounded32(value)):
            raise error(f"{what}: {value!r} overflows float32 (largest finite "
                        f"{FLOAT32_MAX:.7g})")
        return
    info = np.iinfo(np.uint8 if dtype.kind == "b" else dtype)
    lo, hi = (0, 1) if dtype.kind == "b" else (int(info.min), int(info.max))
    if not lo <= value <= hi:
        raise error(f"{what}: {value} does not fit {dtype.name} ({kind})")


def _rounded32(value: float) -> np.float32:
    with np.errstate(over="ignore"):
        return np.float32(value)


def max_elements(dtype: np.dtype) -> int:
    """The most elements of `dtype` the machine's global memory holds."""
    return limits.GLOBAL_WORDS * 4 // dtype.itemsize


PREFIXES = {"i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32",
            "u32": "uint32", "i64": "int64", "u64": "uint64", "f32": "float32",
            "bool": "bool"}


def _array(param, text: str) -> np.ndarray:
    head, colon, rest = text.partition(":")
    if colon and head.strip() in PREFIXES:
        dtype = np.dtype(PREFIXES[head.strip()])
        text = rest
    else:
        dtype = np.dtype(param.dtype or "int32")   # struct/void pointers: words by default
    if text.startswith("zeros:"):
        n = _int(text[len("zeros:"):], f"--arg {param.name}")
        if n < 0:
            raise LaunchArgumentError(f"--arg {param.name}: zeros:{n} is negative")
        _fits_memory(n, dtype, f"--arg {param.name}: zeros:{n}")
        return np.zeros(n, dtype=dtype)
    return number_list(text, dtype, f"--arg {param.name}",
                       f"{param.ctype} elements; a prefix such as u32: names another "
                       "element type")


def number_list(text: str, dtype: np.dtype, what: str, kind: str) -> np.ndarray:
    """Comma-separated numbers as an array of `dtype`, each checked (check_value)."""
    items = text.split(",") if text.strip() else []
    _fits_memory(len(items), dtype, what)
    if dtype.kind == "f":
        return np.array([_float(t, what, kind) for t in items], dtype=dtype)
    values = [_int(t, what) for t in items]
    for v in values:
        check_value(v, dtype, what, kind)
    return np.array(values, dtype=dtype)


def _fits_memory(n: int, dtype: np.dtype, what: str) -> None:
    """Refused before anything is allocated: more elements than global memory holds."""
    if n > max_elements(dtype):
        words = -(-n * dtype.itemsize // 4)
        raise LaunchArgumentError(f"{what} is {n:,} {dtype.name} elements, {words:,} words "
                                  f"of global memory; the machine has "
                                  f"{limits.GLOBAL_WORDS} (isa.limits.GLOBAL_WORDS: at most "
                                  f"{max_elements(dtype)} such elements)")
