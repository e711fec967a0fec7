"""merge.circuits: the circuits `qgpu merge --circuit NAME` can merge, each compiled at a
base's per-layer shape and named token by token for the tokenizer.

- `machine` (the default): the GPU machine circuit (qgpu.circuit.machine), compiled with
  `compile_machine(shape, spec)`. Its part carries `info` for qgpu_merge.json: the spec
  (slots, stages, warps, the operations it decodes), the digest of the machine's sources,
  the shape, and where the global-memory table sits (layer, value head, rows, columns),
  so a later process reads results from the merged model's state (qgpu.runtime.checkpoint).
- the compiler's demo circuits (qgpu.examples.demos).
"""

from __future__ import annotations

from collections.abc import Callable

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import Table
from qgpu.circuit.machine.build import _source_digest, compile_machine
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS
from qgpu.isa import limits
from qgpu.merge.layout import CircuitPart, MergeError, circuit_part
from qgpu.protocol import vocab

MACHINE = "machine"
MEMORY_TABLE = "mem.stage0"  # the copy of the memory table read back (machine.memory)


def demo_part(name: str, shape: LayerShape, progress: bool = False,
              cache: bool = True) -> CircuitPart:
    """A demo circuit compiled at `shape`, its tokens named `<demo>.<token>`."""
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, shape, progress=progress, cache=cache)
    names = [f"{name}.{demo.vocab.name(t)}" for t in range(demo.vocab.size)]
    return circuit_part(compiled, names)


def check_machine_shape(shape: LayerShape) -> None:
    """The machine's memory table has one row per global word in a key head and 2 columns
    per bit in a value head; its register file wants heads as wide."""
    need = limits.MODEL_GLOBAL_WORDS
    bad = [f"{what} {got}" for what, got in (("linear_key_head_dim", shape.key_dim),
                                             ("linear_value_head_dim", shape.value_dim))
           if got < need]
    if bad:
        raise MergeError(f"the machine circuit needs Gated DeltaNet key and value head dims "
                         f">= {need} (its memory table holds {need} words of 32 bits per "
                         f"head); this base has {', '.join(bad)}")


def memory_table_location(compiled) -> dict:
    """Layer and value head of the memory table the runtime reads results from."""
    plan = compiled.plan
    table = next(n for n in plan.order if isinstance(n, Table) and n.name == MEMORY_TABLE)
    head = plan.heads[table][0] * compiled.weights.config.value_heads_per_key_head
    return {"table": MEMORY_TABLE, "layer": int(plan.layer[table]), "head": int(head),
            "rows": limits.MODEL_GLOBAL_WORDS, "columns": 64}


# The machine a merge compiles unless told otherwise: without the fault detector
# (MachineSpec.detect_faults), so that it fits the 2,048 dims a Qwen3.5-2B base shares.
MERGE_SPEC = MachineSpec(slots=1)


def machine_info(compiled, spec) -> dict:
    return {"spec": spec.describe(), "protocol": vocab.PROTOCOL_VERSION,
            "source_digest": _source_digest(),
            "compile_key": compiled.key, "shape": compiled.shape.describe(),
            "memory": memory_table_location(compiled)}


def machine_part(shape: LayerShape, progress: bool = False, spec=None) -> CircuitPart:
    """The machine compiled at `shape`, its tokens named by the protocol (`V(5)`, ...)."""
    check_machine_shape(shape)
    spec = spec or MERGE_SPEC
    compiled = compile_machine(shape, spec, progress=progress)
    part = circuit_part(compiled, [vocab.name(t) for t in range(vocab.VOCAB_SIZE)])
    part.name = MACHINE
    part.info = machine_info(compiled, spec)
    return part


CIRCUITS: dict[str, Callable[..., CircuitPart]] = {
    MACHINE: machine_part,
    **{name: (lambda shape, progress=False, _n=name: demo_part(_n, shape, progress))
       for name in DEMOS},
}


def compile_named(name: str, shape: LayerShape, progress: bool = False,
                  spec=None) -> CircuitPart:
    """A named circuit compiled at `shape`; spec: the machine's MachineSpec (machine only)."""
    if name not in CIRCUITS:
        raise MergeError(f"unknown circuit {name!r}; known: {', '.join(sorted(CIRCUITS))}")
    if spec is not None:
        if name != MACHINE:
            raise MergeError("a machine spec applies to the machine circuit only")
        return machine_part(shape, progress=progress, spec=spec)
    return CIRCUITS[name](shape, progress=progress)
