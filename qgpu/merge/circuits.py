"""merge.circuits: the circuits `qgpu merge --circuit NAME` can merge, each compiled at a
base's per-layer shape and named token by token for the tokenizer.

Today the compiler's demo circuits (qgpu.circuit.demos); the machine circuit registers
here with one entry when it compiles (a function: LayerShape -> CircuitPart).
"""

from __future__ import annotations

from collections.abc import Callable

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.demos import DEMOS
from qgpu.circuit.schedule import LayerShape
from qgpu.merge.layout import CircuitPart, MergeError, circuit_part


def demo_part(name: str, shape: LayerShape, progress: bool = False,
              cache: bool = True) -> CircuitPart:
    """A demo circuit compiled at `shape`, its tokens named `<demo>.<token>`."""
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, shape, progress=progress, cache=cache)
    names = [f"{name}.{demo.vocab.name(t)}" for t in range(demo.vocab.size)]
    return circuit_part(compiled, names)


CIRCUITS: dict[str, Callable[..., CircuitPart]] = {
    name: (lambda shape, progress=False, _n=name: demo_part(_n, shape, progress))
    for name in DEMOS
}


def compile_named(name: str, shape: LayerShape, progress: bool = False) -> CircuitPart:
    if name not in CIRCUITS:
        raise MergeError(f"unknown circuit {name!r}; known: {', '.join(sorted(CIRCUITS))}")
    return CIRCUITS[name](shape, progress=progress)
