"""cli.demo: `qgpu demo`, the dot product of [1, 2, 3] and [4, 5, 6]: the CUDA kernel
(qgpu/examples/dot.cu, in the package; the suite's kernels/dot.cu links to it) is
compiled by the front end (clang-19 -> PTX ->
machine blocks), launched on the compiled model (or, with --engine interp, the reference
interpreter), and the trace the model writes is printed as readable records with its
token count and the result 32 (read from the model's recurrent state)."""

from __future__ import annotations

import numpy as np

from qgpu.cli import html
from qgpu.cuda import compile as compile_cuda
from qgpu.examples import demo_kernel_source
from qgpu.isa.asm import disassemble
from qgpu.protocol import Launch, decode_trace


def add_arguments(parser) -> None:
    parser.add_argument("--quiet", action="store_true", help="print only the result")
    parser.add_argument("--program", action="store_true",
                        help="also print the machine program (assembly)")
    parser.add_argument("--engine", default="model", choices=("interp", "model"),
                        help="run on the compiled model (default; compiled once, then "
                             "cached on disk) or the reference interpreter")
    html.add_html_argument(parser)


def main(args) -> int:
    if args.engine != "interp":
        import qgpu.runtime  # noqa: F401 - registers the model's engines (not at import: ~0.4 s)
    html.check_html(args.html)
    source = demo_kernel_source()
    kernel = compile_cuda(source, filename="dot.cu").get_function("dot")
    a = np.array([1, 2, 3], np.int32)
    b = np.array([4, 5, 6], np.int32)
    out = np.zeros(1, np.int32)
    res = html.launch(kernel, 1, 3, (a, b, out, 3), args.engine, args.html)
    if not args.quiet:
        print(source)
        print(f"dot([1, 2, 3], [4, 5, 6]) on qgpu (engine: {args.engine}): "
              f"{len(res.program.blocks)} machine blocks")
        if args.program:
            print(disassemble(res.program))
        launch = Launch(res.program, res.grid, res.block, list(res.memory))
        print(f"trace: {len(res.trace)} tokens written")
        for rec in decode_trace(launch, res.trace):
            print("  " + str(rec))
    print(f"result: {int(out[0])}")
    if html.page_error(res) is not None:
        raise html.page_error(res)
    return 0
