"""validate.reference: the reference side of a GPU validation. For every (kernel, launch)
of the suite it records the source, the parameter types, the inputs, the reference
interpreter's outputs and the oracle's, in a JSON document that a GPU machine can read
without clang or the qgpu front end.

Arrays are stored as {"dtype": "int32"|"uint32", "values": [...]}; scalars as ints.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import numpy as np

from qgpu.suite import KernelSpec, Param, run_case

FORMAT = "qgpu-validate-reference/1"


def encode_array(array: np.ndarray) -> dict:
    array = np.asarray(array)
    if array.dtype not in (np.int32, np.uint32):
        raise ValueError(f"only int32/uint32 arrays are stored, not {array.dtype}")
    return {"dtype": str(array.dtype), "values": [int(v) for v in array.ravel()]}


def decode_array(stored: dict) -> np.ndarray:
    return np.array(stored["values"], dtype=np.dtype(stored["dtype"]))


def encode_args(params: list[Param], args: dict) -> dict:
    return {p.name: encode_array(args[p.name]) if p.pointer else int(args[p.name])
            for p in params}


def decode_args(stored: dict) -> dict:
    return {k: decode_array(v) if isinstance(v, dict) else int(v) for k, v in stored.items()}


def encode_outputs(outputs: dict) -> dict:
    return {name: encode_array(value) for name, value in outputs.items()}


def decode_outputs(stored: dict) -> dict:
    return {name: decode_array(value) for name, value in stored.items()}


def param_records(params: list[Param]) -> list[dict]:
    return [{"name": p.name, "ctype": p.ctype, "pointer": p.pointer, "unsigned": p.unsigned}
            for p in params]


def params_from_records(records: list[dict]) -> list[Param]:
    return [Param(r["name"], r["ctype"], r["pointer"], r["unsigned"]) for r in records]


def reference_case(spec: KernelSpec, index: int, engine: str = "interp") -> dict:
    """One case: inputs, the interpreter's outputs (or its error) and the oracle's."""
    launch = spec.launches[index]
    case = {"id": spec.case_id(index), "kernel": spec.name, "launch_index": index,
            "grid": launch["grid"], "block": launch["block"],
            "args": encode_args(spec.params, launch["args"]),
            "oracle": encode_outputs(spec.oracle(launch))}
    try:
        outputs, _expected, tokens = run_case(spec, launch, engine=engine)
    except Exception as exc:  # noqa: BLE001 - recorded in the report, not hidden
        case["interp"] = None
        case["interp_error"] = f"{type(exc).__name__}: {exc}"
    else:
        case["interp"] = encode_outputs(outputs)
        case["tokens"] = tokens
    return case


def build_reference(specs: list[KernelSpec], engine: str = "interp",
                    progress=None) -> dict:
    """The reference document for the given suite kernels."""
    kernels, cases = {}, []
    for spec in specs:
        kernels[spec.name] = {"entry": spec.kernel, "source": spec.source,
                              "params": param_records(spec.params)}
        for index in range(len(spec.launches)):
            case = reference_case(spec, index, engine)
            cases.append(case)
            if progress:
                progress(case)
    return {"format": FORMAT, "engine": engine,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "kernels": kernels, "cases": cases}


def save_reference(document: dict, path: Path | str) -> None:
    Path(path).write_text(json.dumps(document, separators=(",", ":")))


def load_reference(path: Path | str) -> dict:
    document = json.loads(Path(path).read_text())
    if document.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} document")
    return document
