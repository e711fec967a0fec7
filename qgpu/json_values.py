"""json_values: JSON that every parser reads. Python's json writes a float that is not
finite as NaN / Infinity, which is not JSON (JavaScript's JSON.parse, strict parsers
reject it); qgpu writes such a float as the string "nan", "inf" or "-inf" instead
(`qgpu run --json`, the launch page's data), documented in docs/cuda.md."""

from __future__ import annotations

import json
import math


def finite(value):
    """`value` with every float that is not finite (in lists, tuples and dicts) replaced
    by "nan", "inf" or "-inf"."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value, **options) -> str:
    """json.dumps of `finite(value)`, never NaN or Infinity (allow_nan=False checks it)."""
    return json.dumps(finite(value), allow_nan=False, **options)
