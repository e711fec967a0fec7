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

import numpy as np

from qgpu.errors import QgpuError


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
    inf or nan, rounded to float32 as a C literal `2.5f` is)."""
    if param.dtype == "bool" and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    if param.dtype == "float32":
        try:
            return float(text.strip())
        except ValueError:
            raise LaunchArgumentError(f"--arg {param.name}: '{text}' is not a number "
                                      f"({param.ctype} parameter)") from None
    return _int(text, param.name)


def _int(text: str, name: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise LaunchArgumentError(f"--arg {name}: '{text}' is not an integer") from None


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
        n = _int(text[len("zeros:"):], param.name)
        if n < 0:
            raise LaunchArgumentError(f"--arg {param.name}: zeros:{n} is negative")
        return np.zeros(n, dtype=dtype)
    items = [t for t in text.split(",")] if text.strip() else []
    if dtype.kind == "f":
        try:
            return np.array([float(t) for t in items], dtype=dtype)
        except ValueError:
            raise LaunchArgumentError(f"--arg {param.name}: '{text}' is not a list of "
                                      "numbers") from None
    values = [_int(t, param.name) for t in items]
    info = np.iinfo(np.uint8 if dtype.kind == "b" else dtype)
    lo, hi = (0, 1) if dtype.kind == "b" else (info.min, info.max)
    for v in values:
        if not lo <= v <= hi:
            raise LaunchArgumentError(f"--arg {param.name}: {v} does not fit {dtype.name} "
                                      f"({param.ctype} elements; a prefix such as u32: names "
                                      "another element type)")
    return np.array(values, dtype=dtype)
