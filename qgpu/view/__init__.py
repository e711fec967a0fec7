"""view: a launch as one self-contained HTML page (no network, no external assets): the
launch and its arrays before and after, CUDA / PTX / machine blocks side by side with the
current block highlighted, a timeline (one row per warp, one cell per executed block, the
active lanes drawn, barriers marked), a step inspector (the block's tokens with ids and
names, registers written per lane, memory words written, the memory picture after it),
the model's logit margin per written token with `--check`'s verdict, keyboard stepping.

    data = launch_data(prompt, trace, ...)      # view.data: plain JSON-able data
    html = render_html(data)                    # the page (CSS, JS and data inlined)
    write_html("dot.html", data)                # -> bytes written
    result_data(res)                            # data of a qgpu.cuda LaunchResult
    iframe(html)                                # the page in an <iframe srcdoc> (notebooks)

The page's HTML, CSS and JavaScript are files of this package (page.html, view.css,
view.js); this package reads only token streams and isa/protocol data.

Owns: pictures of launches. May import: protocol, isa, errors (view.browser: a headless
Chromium for screenshots and the tests, nothing of qgpu).
"""

from __future__ import annotations

import html as _html
from importlib import resources
from pathlib import Path

from qgpu.files import json_dumps
from qgpu.protocol import encode_prompt
from qgpu.view.data import Arrays, Sources, launch_data

__all__ = ["Arrays", "Sources", "launch_data", "render_html", "write_html", "result_data",
           "iframe"]


def _asset(name: str) -> str:
    return resources.files("qgpu.view").joinpath(name).read_text(encoding="utf-8")


def render_html(data: dict, title: str | None = None) -> str:
    """The whole page for `data` (view.data.launch_data), one string."""
    blob = json_dumps(data, separators=(",", ":"))  # JSON.parse reads it: no NaN
    blob = blob.replace("<", "\\u003c")  # only inside JSON strings: safe in <script>
    title = title or f"qgpu: {data.get('kernel', 'launch')}"
    page = _asset("page.html")
    for key, value in (("/*{{CSS}}*/", _asset("view.css")), ("/*{{JS}}*/", _asset("view.js")),
                       ("{{TITLE}}", _html.escape(title)), ("{{DATA}}", blob)):
        page = page.replace(key, value, 1)
    return page


def write_html(path: str | Path, data: dict, title: str | None = None) -> int:
    """Write the page to `path`; returns its size in bytes."""
    text = render_html(data, title).encode("utf-8")
    Path(path).write_bytes(text)
    return len(text)


def result_data(res) -> dict:
    """The page's data for a launch result of the CUDA API (qgpu.cuda.LaunchResult): its
    program, launch, initial and final memory, trace, and what the front end and the
    engine recorded (sources, argument layout, margins, the interpreter's trace, what the
    kernel printed)."""
    prompt = encode_prompt(res.program, res.grid, res.block, list(res.initial))
    src = res.sources or {}
    return launch_data(
        prompt, list(res.trace), kernel=res.kernel, engine=res.engine,
        sources=Sources(src.get("source", ""), src.get("filename", ""), src.get("ptx", ""),
                        list(src.get("origins", ()))),
        arrays=Arrays(dict(res.layout), dict(res.signed), dict(res.scalars)),
        final_memory=list(res.memory), margins=res.margins, expected=res.expected,
        printed=getattr(res, "printed", "") or "")


def iframe(page: str, height: int = 900) -> str:
    """The page inside an <iframe srcdoc> (its CSS and scripts kept to themselves), as
    notebooks display `_repr_html_`."""
    return (f'<iframe srcdoc="{_html.escape(page, quote=True)}" style="width:100%;'
            f'height:{height}px;border:1px solid #ddd" sandbox="allow-scripts"></iframe>')
