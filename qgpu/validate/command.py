"""validate.command: `qgpu validate-gpu` and `python -m qgpu.validate`: run the kernel
suite on a real NVIDIA GPU and compare it with the reference interpreter (issue 8).

Two halves, which may run on two machines:
  qgpu validate-gpu --prepare ref.json          (needs clang-19: interpreter + oracle side)
  qgpu validate-gpu --reference ref.json --out DIR   (needs a GPU and CuPy)
Without --reference, one machine with both does everything. --rebuild JOURNAL makes the
report of a run that was cut short.
"""

from __future__ import annotations

import sys
from pathlib import Path

from qgpu.errors import QgpuError
from qgpu.files import check_output
from qgpu.progress import progress
from qgpu.suite import load_suite
from qgpu.validate.gpu import CupyBackend
from qgpu.validate.reference import (
    build_reference,
    load_reference,
    merge_references,
    save_reference,
)
from qgpu.validate.report import markdown, write_report
from qgpu.validate.run import report_from_journal, validate


def add_arguments(parser) -> None:
    parser.add_argument("--prepare", metavar="FILE",
                        help="only compute the reference side and write it to FILE")
    parser.add_argument("--reference", metavar="FILE",
                        help="a reference file made by --prepare (no clang needed)")
    parser.add_argument("--out", metavar="DIR", default="validation-report",
                        help="where report.json, report.md and journal.jsonl go")
    parser.add_argument("--kernels", metavar="NAMES",
                        help="comma-separated suite kernel names (default: all)")
    parser.add_argument("--engine", default="interp",
                        help="engine that computes the reference outputs (default interp)")
    parser.add_argument("--rebuild", metavar="JOURNAL",
                        help="write the report of an interrupted run from its journal")


def _need_cupy() -> None:
    """The GPU half needs CuPy and a GPU: say so before the reference half runs."""
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        raise QgpuError("CuPy is not installed (pip install cupy-cuda12x on a machine with "
                        "an NVIDIA GPU); without a GPU, --prepare FILE computes the reference "
                        "half and --reference FILE runs the GPU half elsewhere")


def _check_choices(args, names: set[str] | None) -> None:
    """--kernels and --engine name things that exist (a typo ran 0 cases, exit 0)."""
    from qgpu.cuda.api import ENGINES

    if args.engine not in ENGINES:
        raise QgpuError(f"--engine {args.engine}: no such engine (one of "
                        f"{', '.join(sorted(e for e in ENGINES if ':' not in e))})")
    if names is not None and not args.reference and not args.rebuild:
        known = {s.name for s in load_suite()}
        unknown = sorted(n for n in names - known if n) or ([] if names - {""} else ['""'])
        if unknown:
            raise QgpuError(f"--kernels: no suite kernel named {', '.join(unknown)} "
                            f"(the suite has {len(known)}: {', '.join(sorted(known)[:5])}, ...)")


def _read(load, path: str, what: str):
    try:
        return load(path)
    except OSError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise QgpuError(f"{path} is not {what} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:100]})") from None


def main(args, extra=None) -> int:
    """extra: None, or a callable returning a reference document whose cases join the
    suite's when the reference is built here (the CLI's float fuzz sample)."""
    import qgpu.runtime  # noqa: F401 - registers the model's engines (not at import: ~0.4 s)

    names = set(args.kernels.split(",")) if args.kernels is not None else None
    _check_choices(args, names)
    check_output(args.prepare, (args.reference, args.rebuild))  # before the reference runs
    if not args.rebuild and not args.prepare:
        _need_cupy()
    if args.rebuild:
        report = _read(report_from_journal, args.rebuild, "a validation journal")
        write_report(report, args.out)
        print(markdown(report), end="")
        return 0 if report["cases_matched"] == report["cases_run"] else 1
    if args.reference:
        reference = _read(load_reference, args.reference, "a --prepare reference file")
    else:
        specs = [s for s in load_suite() if not names or s.name in names]
        reference = build_reference(specs, engine=args.engine, progress=_progress(
            "ref", sum(len(s.launches) for s in specs)))
        if extra is not None:
            reference = merge_references(reference, extra())
        if args.prepare:
            save_reference(reference, args.prepare)
            failed = sum(c.get("interp") is None for c in reference["cases"])
            floats = sum(bool(k.get("float")) for k in reference["kernels"].values())
            print(f"{args.prepare}: {len(reference['cases'])} cases of "
                  f"{len(reference['kernels'])} kernels ({floats} computing with floats), "
                  f"{failed} without interpreter outputs")
            return 0
    try:
        backend = CupyBackend()
        backend.device_info()
    except Exception as exc:  # noqa: BLE001 - CuPy's errors when there is no usable GPU
        raise QgpuError(f"no usable GPU through CuPy ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:120]})") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = validate(reference, backend, journal=out / "journal.jsonl",
                      kernels=names, progress=_progress("gpu", sum(
                          not names or c["kernel"] in names for c in reference["cases"])))
    write_report(report, out)
    print(markdown(report), end="")
    return 0 if report["cases_matched"] == report["cases_run"] else 1


def _progress(tag, total: int):
    """A bar over the cases (on a terminal); a case that fails is also printed as a line."""
    bar = progress(total=total, desc=f"validate-gpu {tag}", unit="case", leave=True)

    def show(case):
        status = case.get("status") or ("ok" if case.get("interp") is not None else "error")
        bar.set_postfix_str(f"{case['id']}: {status}", refresh=False)
        bar.update()
        if status not in ("ok", "match"):
            bar.write(f"[{tag}] {case['id']}: {status}", file=sys.stderr)
        if bar.n == total:
            bar.close()
    return show
