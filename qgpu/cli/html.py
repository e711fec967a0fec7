"""cli.html: `--html PATH` for `qgpu run`, `qgpu demo` and `qgpu trace`: the launch as one
self-contained page (qgpu.view). Model launches record every written token's logit margin
for it (runtime.generate.record_margins: every logit is computed, about 3x a greedy
step); a `--check` that finds a mismatch still writes the page, with the first differing
token, before the error is reported.

The path is checked before the launch runs (`check_html`: not one of the inputs, not a
folder, not a device, FIFO or socket, which is never replaced; its folder exists and is
writable); the page is written under a temporary name and renamed (a symlink: at its
destination, the link kept), and a page that cannot be written after all (a full disk)
does not lose the launch: its results are printed, then the error (`page_error`)."""

from __future__ import annotations

import sys

from qgpu.errors import CheckMismatch
from qgpu.files import OutputError, atomic_write, check_output


def add_html_argument(parser) -> None:
    parser.add_argument("--html", metavar="PATH",
                        help="also write the launch as one self-contained HTML page (timeline, "
                             "step inspector, margins on the model)")


BIG_PAGE = 20 * 2**20  # a page larger than this is announced before it is written
MAX_SOURCE_BYTES = 8 * 2**20  # the most of a CUDA or assembly file a command reads
MAX_STREAM_BYTES = 512 * 2**20  # the most of a token-stream file `qgpu trace` reads


def check_html(path: str | None, *inputs) -> None:
    """OutputError, before any work, when the page could not be written at `path`."""
    if path:
        check_output(path, inputs)


def write_page(path: str, data: dict) -> None:
    from qgpu.view import render_html

    try:
        text = render_html(data).encode("utf-8")
        if len(text) > BIG_PAGE:  # said before the write, which takes a while
            print(f"qgpu: the page is {len(text) / 2**20:.0f} MB (a long launch): writing "
                  f"{path}; a browser may be slow to open it", file=sys.stderr, flush=True)
        with atomic_write(path) as tmp:
            size = tmp.write_bytes(text)
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
    print(f"qgpu: wrote {path} ({size:,} bytes)", file=sys.stderr)


def page_error(res) -> OutputError | None:
    """The error that kept `launch`'s page from being written (raise it after printing
    the results), or None."""
    return getattr(res, "page_error", None)


def launch(kernel, grid: int, block: int, args, engine: str, html: str | None,
           budget: int | None = None, shared_mem: int = 0, printf_words: int | None = None):
    """kernel(grid, block, args, engine=engine, budget=budget, shared_mem=shared_mem,
    printf_words=printf_words), and the page at `html` when given."""
    def call():
        return kernel(grid, block, args, engine=engine, budget=budget, shared_mem=shared_mem,
                      printf_words=printf_words)

    if not html:
        return call()
    from qgpu.view import result_data

    margins = engine.startswith("model") and not engine.startswith("model-forced")
    try:
        if margins:
            from qgpu.runtime.generate import record_margins
            with record_margins():
                res = call()
        else:
            res = call()
    except CheckMismatch as err:
        if getattr(err, "written", None) is not None:
            _mismatch_page(kernel, grid, block, args, engine, html, err)
        raise
    try:
        write_page(html, result_data(res))
    except OutputError as err:  # the results are printed first, then this error
        res.page_error = err
    return res


def _mismatch_page(kernel, grid, block, args, engine, html, err) -> None:
    from qgpu.cuda.api import LaunchResult, scalar_values
    from qgpu.view import result_data

    program, memory, layout, _ = kernel.link(grid, block, args)
    params = kernel.signature.params
    res = LaunchResult(kernel.name, engine, grid, block, program, None, [], err.written, 0.0,
                       layout, initial=memory,
                       signed={p.name: p.signed for p in params if p.pointer},
                       scalars=scalar_values(params, args),
                       sources=kernel.sources, margins=getattr(err, "margins", None),
                       expected=err.expected)
    write_page(html, result_data(res))
