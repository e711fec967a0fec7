"""The viewer's example pages and their screenshots (docs/viewer/): the dot demo and a
4-warp divergent suite launch (divergent_if_else, grid 1 x block 16), run on the compiled
model with --check (margins recorded, every token compared with the interpreter's), each
written as one HTML page and drawn by headless Chromium.

    python benchmarks/viewer_pages.py [--engine model-check|interp] [--out docs/viewer]

Prints each page's size in bytes and its launch's figures."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import qgpu
from qgpu import suite
from qgpu.cli.html import launch
from qgpu.suite import kernel_source
from qgpu.view.browser import screenshot

DOT_CU = kernel_source("dot")   # the demo kernel, kernels/dot.cu

ROOT = Path(__file__).resolve().parents[1]


def _dot(engine: str, html: Path):
    k = qgpu.compile(DOT_CU, filename="dot.cu").get_function("dot")
    out = np.zeros(1, np.int32)
    res = launch(k, 1, 3, (np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32),
                           out, 3), engine, str(html))
    assert int(out[0]) == 32
    return res


def _divergent(engine: str, html: Path):
    spec = next(s for s in suite.load_suite() if s.name == "divergent_if_else")
    case = spec.launches[0]
    k = qgpu.compile(spec.source, filename="divergent_if_else.cu").get_function(spec.kernel)
    values = suite.positional_args(spec, case["args"])
    res = launch(k, case["grid"], case["block"], values, engine, str(html))
    out = values[[p.name for p in spec.params].index("out")]
    assert np.array_equal(out, spec.oracle(case)["out"])
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", default="model-check")
    p.add_argument("--out", default=str(ROOT / "docs" / "viewer"))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, run, step, size in (("dot", _dot, 4, "1440,1200"),
                                  ("divergent", _divergent, 13, "1440,1400")):
        html = out / f"{name}.html"
        res = run(args.engine, html)
        screenshot(html, out / f"{name}.png", f"step={step}", size)
        margins = f", smallest margin {min(res.margins):.4f}" if res.margins else ""
        print(f"{name}: {res.kernel} grid {res.grid} x block {res.block} on {res.engine}: "
              f"{res.blocks_executed} blocks, {res.tokens} tokens{margins}; "
              f"{html} {html.stat().st_size:,} bytes, {name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
