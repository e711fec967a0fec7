"""examples: small circuits written with the compiler (demos: adder, counter, table
lookups, with their token layouts) and a model built from the weight primitives alone
(table_machine). The compiler's tests, its generated doc, the benchmarks and
`qgpu merge --circuit NAME` use them; the compiler core does not. Also the CUDA source of
`qgpu demo` (dot.cu), shipped inside the package so that the demo runs from an installed
wheel; the suite's kernels/dot.cu is a link to it.

Owns: example circuits and the demo kernel's source. May import: circuit, primitives,
model, errors.
"""

from pathlib import Path


def demo_kernel_source() -> str:
    """The CUDA source of `qgpu demo`'s kernel (the suite's `dot`)."""
    return (Path(__file__).resolve().parent / "dot.cu").read_text()
