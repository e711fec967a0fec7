"""validate.report: the validation report. JSON (machine, date, counts, every case with its
status and every mismatch in detail; which cases computed with floats and how many of
those matched bit for bit) and a short markdown summary."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

STATUSES = ("match", "interp_differs", "oracle_differs", "gpu_differs", "error")


def build_report(device: dict, cases: list[dict], reference_meta: dict) -> dict:
    """cases: {"id", "kernel", "status", ...comparison, optional "error"}."""
    kernels: dict[str, list[str]] = {}
    for case in cases:
        kernels.setdefault(case["kernel"], []).append(case["status"])
    counts = {s: sum(c["status"] == s for c in cases) for s in STATUSES}
    floats = [c for c in cases if c.get("float")]
    return {
        "float_cases_run": len(floats),
        "float_cases_matched": sum(c["status"] == "match" for c in floats),
        "float_kernels": sorted({c["kernel"] for c in floats}),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "device": device,
        "reference": reference_meta,
        "cases_run": len(cases),
        "cases_matched": counts["match"],
        "kernels_run": len(kernels),
        "kernels_matched": sum(all(s == "match" for s in v) for v in kernels.values()),
        "counts": counts,
        "cases": cases,
    }


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(report: dict) -> str:
    dev = report["device"]
    lines = [
        "# qgpu suite on a real GPU",
        "",
        "| item | value |",
        "|---|---|",
        f"| GPU | {_cell(dev.get('gpu', '?'))} (compute capability "
        f"{dev.get('compute_capability', '?')}) |",
        f"| driver | {_cell(dev.get('driver', '?'))} (CUDA driver API "
        f"{dev.get('cuda_driver_api', '?')}) |",
        f"| CUDA runtime / NVRTC | {dev.get('cuda_runtime', '?')} / {dev.get('nvrtc', '?')} |",
        f"| CuPy | {dev.get('cupy', '?')} |",
        f"| date | {report['date']} |",
        f"| reference | {report['reference'].get('engine', '?')} engine, made "
        f"{report['reference'].get('created', '?')} |",
        f"| kernels matched / run | {report['kernels_matched']} / {report['kernels_run']} |",
        f"| launches matched / run | {report['cases_matched']} / {report['cases_run']} |",
        f"| float launches matched / run | {report.get('float_cases_matched', 0)} / "
        f"{report.get('float_cases_run', 0)} (bit for bit; kernels: "
        f"{_cell(_float_kernels(report))}) |",
        "",
    ]
    bad = [c for c in report["cases"] if c["status"] != "match"]
    if not bad:
        lines.append("Every output array of every launch is equal on the GPU, the reference "
                     "interpreter and the oracle.")
        return "\n".join(lines) + "\n"
    lines += ["## Mismatches and errors", "", "| case | status | detail |", "|---|---|---|"]
    for case in bad:
        lines.append(f"| {_cell(case['id'])}{' (float)' if case.get('float') else ''} | "
                     f"{case['status']} | "
                     f"{_cell(_summary(case))} |")
    return "\n".join(lines) + "\n"


def _float_kernels(report: dict) -> str:
    names = report.get("float_kernels") or []
    fuzz = [n for n in names if n.startswith("ffuzz_")]
    named = [n for n in names if not n.startswith("ffuzz_")]
    return ", ".join(named + ([f"{len(fuzz)} float fuzz programs"] if fuzz else [])) or "none"


def _summary(case: dict) -> str:
    if case.get("error"):
        return case["error"][:300]
    parts = []
    for key in ("gpu_vs_interp", "gpu_vs_oracle", "interp_vs_oracle"):
        for diff in case.get(key) or []:
            if "elements" in diff:
                first = diff["elements"][0]
                parts.append(f"{key} {diff['array']}: {diff['count']}/{diff['size']} differ, "
                             f"first [{first['index']}] {first['got']} != {first['want']}")
            else:
                parts.append(f"{key} {diff['array']}: {diff['problem']}")
    return "; ".join(parts)


def write_report(report: dict, directory: Path | str) -> tuple[Path, Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / "report.json"
    md_path = directory / "report.md"
    json_path.write_text(json.dumps(report, indent=1))
    md_path.write_text(markdown(report))
    return json_path, md_path
