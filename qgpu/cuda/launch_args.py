"""cuda.launch_args: a launch described in words, for every host that takes one so: the
kernel to launch (`--kernel`, or the module's only kernel) and its arguments from
NAME=VALUE strings (`qgpu run --arg`, chat's `/run` lines and `// launch:` comments).

A pointer parameter takes comma-separated integers (the array's initial contents) or
zeros:N; an integer parameter takes one integer (decimal, 0x.., 0o.., 0b..)."""

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
    """Launch arguments by parameter name, from NAME=VALUE strings."""
    params = {p.name: p for p in kernel.params}
    given: dict[str, str] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        name = name.strip()
        if not eq:
            raise LaunchArgumentError(f"--arg '{pair}': expected NAME=VALUE")
        if name not in params:
            raise LaunchArgumentError(f"--arg {name}: {kernel.name} has no parameter "
                                      f"'{name}' (parameters: {', '.join(params) or 'none'})")
        if name in given:
            raise LaunchArgumentError(f"--arg {name} given twice")
        given[name] = value
    missing = [n for n in params if n not in given]
    if missing:
        raise LaunchArgumentError(f"missing --arg for {', '.join(missing)} "
                                  f"({kernel.signature})")
    return {n: _array(p, given[n]) if p.pointer else _int(given[n], n)
            for n, p in params.items()}


def _int(text: str, name: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise LaunchArgumentError(f"--arg {name}: '{text}' is not an integer") from None


def _array(param, text: str) -> np.ndarray:
    dtype = np.int32 if param.signed else np.uint32
    lo, hi = (-(1 << 31), (1 << 31) - 1) if param.signed else (0, (1 << 32) - 1)
    if text.startswith("zeros:"):
        n = _int(text[len("zeros:"):], param.name)
        if n < 0:
            raise LaunchArgumentError(f"--arg {param.name}: zeros:{n} is negative")
        return np.zeros(n, dtype=dtype)
    items = [t for t in text.split(",")] if text.strip() else []
    values = [_int(t, param.name) for t in items]
    for v in values:
        if not lo <= v <= hi:
            raise LaunchArgumentError(f"--arg {param.name}: {v} does not fit {param.ctype}")
    return np.array(values, dtype=dtype)
