"""validate.compare: array comparison for a validation case. A case matches when the GPU's
output arrays equal the reference interpreter's and the oracle's, element for element
(float32 bit for bit: a NaN's payload and the sign of a zero count; a float element is
reported as "value (0xbits)"); every difference is kept with its array, index and the
three values."""

from __future__ import annotations

import numpy as np

MAX_DETAILS = 16     # element differences kept per array


def diff_arrays(name: str, got: np.ndarray, want: np.ndarray) -> dict | None:
    """None when equal (same dtype, shape and elements), otherwise a description."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return {"array": name, "problem": f"shape {got.shape} != {want.shape}"}
    if got.dtype != want.dtype:
        return {"array": name, "problem": f"dtype {got.dtype} != {want.dtype}"}
    if got.dtype.kind == "f":   # bit for bit: NaN payloads and the sign of zero count
        bits_got, bits_want = got.view(np.uint32), want.view(np.uint32)
        bad = np.flatnonzero(bits_got != bits_want)
        show = [(_float(got[i], bits_got[i]), _float(want[i], bits_want[i]))
                for i in bad[:MAX_DETAILS]]
    else:
        bad = np.flatnonzero(got != want)
        show = [(int(got[i]), int(want[i])) for i in bad[:MAX_DETAILS]]
    if bad.size == 0:
        return None
    return {"array": name, "count": int(bad.size), "size": int(got.size),
            "elements": [{"index": int(i), "got": g, "want": w}
                         for i, (g, w) in zip(bad[:MAX_DETAILS], show, strict=False)]}


def _float(value, bits) -> str:
    """A float32 element as the report shows it: value and bit pattern."""
    return f"{float(value)!r} (0x{int(bits):08x})"


def diff_outputs(got: dict, want: dict) -> list[dict]:
    """Every array that differs between two output dicts (a missing array differs)."""
    diffs = []
    for name in sorted(set(got) | set(want)):
        if name not in got or name not in want:
            diffs.append({"array": name, "problem": "missing on one side"})
            continue
        diff = diff_arrays(name, got[name], want[name])
        if diff:
            diffs.append(diff)
    return diffs


def compare_case(gpu: dict | None, interp: dict | None, oracle: dict) -> dict:
    """The three pairwise comparisons of one case and its status:
      match           GPU == interpreter == oracle
      interp_differs  GPU == oracle != interpreter (the qgpu pipeline is wrong)
      oracle_differs  GPU == interpreter != oracle (the oracle is wrong)
      gpu_differs     GPU differs from both (the kernel's meaning depends on the GPU, or
                      interpreter and oracle share a mistake)
      error           the GPU or the interpreter side has no outputs."""
    result = {"gpu_vs_interp": None, "gpu_vs_oracle": None, "interp_vs_oracle": None}
    if gpu is not None and interp is not None:
        result["gpu_vs_interp"] = diff_outputs(gpu, interp)
    if gpu is not None:
        result["gpu_vs_oracle"] = diff_outputs(gpu, oracle)
    if interp is not None:
        result["interp_vs_oracle"] = diff_outputs(interp, oracle)
    if gpu is None or interp is None:
        result["status"] = "error"
    elif not result["gpu_vs_interp"] and not result["gpu_vs_oracle"]:
        result["status"] = "match"
    elif not result["gpu_vs_oracle"]:
        result["status"] = "interp_differs"
    elif not result["gpu_vs_interp"]:
        result["status"] = "oracle_differs"
    else:
        result["status"] = "gpu_differs"
    return result
