"""validate.reference: the reference side of a GPU validation. For every (kernel, launch)
of the suite it records the source, the parameter types, the inputs, the reference
interpreter's outputs and the oracle's, in a JSON document that a GPU machine can read
without clang or the qgpu front end.

Arrays are stored as {"dtype": D, "values": [...]} with D one of the suite's ARRAY_DTYPES
(int32, uint32, int8, uint8, int16, uint16 as integers, bool as 0/1, float32 as its
uint32 bit patterns: exact, NaN payloads and -0 kept, no JSON float in the way); scalars
as ints, a float scalar as {"float32_bits": B}. A kernel record says whether the kernel
computes with floats ("float": its PTX has .f32 instructions), so a report can say which
cases compared float results.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import numpy as np

from qgpu.suite import ARRAY_DTYPES, KernelSpec, Param, compiled_module, run_case

FORMAT = "qgpu-validate-reference/1"


def encode_array(array: np.ndarray) -> dict:
    array = np.asarray(array)
    if array.dtype not in ARRAY_DTYPES:
        raise ValueError(f"only {'/'.join(d.name for d in ARRAY_DTYPES)} arrays are stored, "
                         f"not {array.dtype}")
    flat = array.ravel()
    if array.dtype.kind == "f":
        flat = flat.view(np.uint32)
    return {"dtype": str(array.dtype), "values": [int(v) for v in flat]}


def decode_array(stored: dict) -> np.ndarray:
    dtype = np.dtype(stored["dtype"])
    if dtype.kind == "f":
        return np.array(stored["values"], dtype=np.uint32).view(dtype)
    return np.array(stored["values"], dtype=dtype)


def _encode_scalar(value):
    if isinstance(value, float | np.floating):
        return {"float32_bits": int(np.array([value], np.float32).view(np.uint32)[0])}
    return int(value)


def _decode_scalar(value):
    if isinstance(value, dict) and "float32_bits" in value:
        return np.array([value["float32_bits"]], np.uint32).view(np.float32)[0]
    return int(value)


def encode_args(params: list[Param], args: dict) -> dict:
    return {p.name: encode_array(args[p.name]) if p.pointer else _encode_scalar(args[p.name])
            for p in params}


def decode_args(stored: dict) -> dict:
    return {k: decode_array(v) if isinstance(v, dict) and "dtype" in v else _decode_scalar(v)
            for k, v in stored.items()}


def encode_outputs(outputs: dict) -> dict:
    return {name: encode_array(value) for name, value in outputs.items()}


def decode_outputs(stored: dict) -> dict:
    return {name: decode_array(value) for name, value in stored.items()}


def param_records(params: list[Param]) -> list[dict]:
    return [{"name": p.name, "ctype": p.ctype, "pointer": p.pointer, "unsigned": p.unsigned,
             "dtype": p.dtype} for p in params]


def params_from_records(records: list[dict]) -> list[Param]:
    return [Param(r["name"], r["ctype"], r["pointer"], r["unsigned"], r.get("dtype"))
            for r in records]


def computes_floats(source: str) -> bool:
    """Whether the kernel's PTX (clang's, as qgpu compiles it) has .f32 instructions."""
    try:
        ptx = compiled_module(source).ptx
    except Exception:  # noqa: BLE001 - a kernel qgpu refuses: judged by its source
        return "float" in source
    return any(".f32" in line and not line.lstrip().startswith(("//", ".reg"))
               for line in ptx.splitlines())


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
                              "params": param_records(spec.params),
                              "float": computes_floats(spec.source)}
        for index in range(len(spec.launches)):
            case = reference_case(spec, index, engine)
            cases.append(case)
            if progress:
                progress(case)
    return reference_document(engine, kernels, cases)


def reference_document(engine: str, kernels: dict, cases: list[dict]) -> dict:
    """A reference document of `kernels` (name -> entry, source, params, float) and their
    `cases`, as every builder writes it (the suite's above, the fuzzers')."""
    return {"format": FORMAT, "engine": engine,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "kernels": kernels, "cases": cases}


def program_case(name: str, grid: int, block: int, args: dict, oracle: dict,
                 interp: dict) -> dict:
    """The one case of a generated program (a fuzzer's): launch 0 of kernel `name`, its
    encoded arguments and the oracle's and qgpu's encoded outputs."""
    return {"id": f"{name}[g{grid}b{block}]", "kernel": name, "launch_index": 0,
            "grid": grid, "block": block, "args": args, "oracle": oracle, "interp": interp}


def merge_references(base: dict, extra: dict) -> dict:
    """base with extra's kernels and cases added (kernel names must not clash)."""
    clash = set(base["kernels"]) & set(extra["kernels"])
    if clash:
        raise ValueError(f"kernel names in both references: {sorted(clash)[:5]}")
    return dict(base, kernels={**base["kernels"], **extra["kernels"]},
                cases=base["cases"] + extra["cases"],
                engine=f"{base.get('engine')} + {extra.get('engine')}")


def save_reference(document: dict, path: Path | str) -> None:
    Path(path).write_text(json.dumps(document, separators=(",", ":")))


def load_reference(path: Path | str) -> dict:
    document = json.loads(Path(path).read_text())
    if document.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} document")
    return document
