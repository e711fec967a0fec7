"""validate.run: the validation loop. Every reference case is launched on a backend (the
GPU), compared with the reference interpreter's and the oracle's outputs, and journaled
line by line (so a run cut short still leaves its results), then summarised in a report.

A backend has device_info() -> dict and run(kernel, params, case, args) -> outputs
(qgpu.validate.gpu.CupyBackend on a machine with an NVIDIA GPU)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from qgpu.validate.compare import compare_case
from qgpu.validate.reference import (
    decode_args,
    decode_outputs,
    encode_outputs,
    params_from_records,
)
from qgpu.validate.report import build_report


def validate_case(reference: dict, case: dict, backend) -> dict:
    """Run one reference case on the backend and compare; errors become the status."""
    kernel = reference["kernels"][case["kernel"]]
    params = params_from_records(kernel["params"])
    result = {"id": case["id"], "kernel": case["kernel"], "grid": case["grid"],
              "block": case["block"], "float": bool(kernel.get("float"))}
    started = time.perf_counter()
    try:
        gpu = backend.run(kernel, params, case, decode_args(case["args"]))
    except Exception as exc:  # noqa: BLE001 - one failing kernel must not stop the run
        gpu = None
        result["error"] = f"GPU: {type(exc).__name__}: {exc}"
    result["gpu_seconds"] = round(time.perf_counter() - started, 4)
    interp = decode_outputs(case["interp"]) if case.get("interp") is not None else None
    if interp is None:
        result["error"] = (result.get("error", "") + " interpreter: "
                           + case.get("interp_error", "no outputs")).strip()
    oracle = decode_outputs(case["oracle"])
    result.update(compare_case(gpu, interp, oracle))
    if result["status"] != "match":
        # the full arrays of a failing case, for the report's reader
        result["outputs"] = {"gpu": encode_outputs(gpu) if gpu is not None else None,
                             "interp": case.get("interp"), "oracle": case["oracle"]}
        result["inputs"] = case["args"]
    return result


def validate(reference: dict, backend, journal: Path | str | None = None,
             kernels: set[str] | None = None, progress=None) -> dict:
    """Validate every case (or those of the named kernels); returns the report."""
    device = backend.device_info()
    meta = {k: reference.get(k) for k in ("format", "engine", "created")}
    journal_file = open(journal, "w") if journal else None  # noqa: SIM115
    try:
        if journal_file:
            journal_file.write(json.dumps({"device": device, "reference": meta}) + "\n")
            journal_file.flush()
        results = []
        for case in reference["cases"]:
            if kernels and case["kernel"] not in kernels:
                continue
            result = validate_case(reference, case, backend)
            results.append(result)
            if journal_file:
                journal_file.write(json.dumps(result) + "\n")
                journal_file.flush()
            if progress:
                progress(result)
    finally:
        if journal_file:
            journal_file.close()
    return build_report(device, results, meta)


def report_from_journal(path: Path | str) -> dict:
    """The report of a run that was cut short, from its journal."""
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    if not lines or "device" not in lines[0]:
        raise ValueError(f"{path}: not a validation journal")
    return build_report(lines[0]["device"], lines[1:], lines[0]["reference"])
