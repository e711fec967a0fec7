"""docs/machine-layers.md is the generated map of the default compiled machine: it must
match what the generator makes from the current plan, and every node of the machine must
belong to a named component (nothing falls into "other")."""

import pytest

from qgpu.circuit.ir import Counter, Table, Unit
from qgpu.circuit.machine.layout_doc import OTHER, component_of, layout_doc
from qgpu.docgen.layers_doc import DOC, HEADER
from qgpu.runtime.compiled import load_machine

pytestmark = pytest.mark.slow


def test_checked_in_doc_is_current():
    compiled = load_machine(progress=False).compiled
    assert DOC.read_text() == HEADER + layout_doc(compiled), \
        "docs/machine-layers.md is stale: run python -m qgpu.docgen layers"


def test_every_placed_node_has_a_component():
    plan = load_machine(progress=False).compiled.plan
    stray = [n.name for n in plan.order if isinstance(n, (Table, Counter, Unit))
             and component_of(n) == OTHER]
    assert not stray


def test_size_report_figures_are_the_current_machines():
    """merge.size's defaults (the 2B merge's size report in docs/merge.md and the README)
    are the merged machine's (merge.circuits.MERGE_SPEC, without the fault detector):
    hidden, layers, nonzeros within 1%, and the parameters its
    2B merge stores in bf16 (machine_bf16_parameters) within 1%."""
    from qgpu.circuit.machine.build import compile_machine
    from qgpu.merge.circuits import MERGE_SPEC
    from qgpu.merge.size import (
        MACHINE_BF16_PARAMS,
        MACHINE_HIDDEN,
        MACHINE_LAYERS,
        MACHINE_NONZEROS,
        machine_bf16_parameters,
    )

    compiled = compile_machine(spec=MERGE_SPEC)  # the machine a merge compiles
    assert (MACHINE_HIDDEN, MACHINE_LAYERS) == (compiled.plan.hidden, compiled.plan.n_layers)
    assert abs(compiled.weights.nonzero_count() - MACHINE_NONZEROS) <= 0.01 * MACHINE_NONZEROS
    bf16 = machine_bf16_parameters(compiled.weights)
    assert abs(bf16 - MACHINE_BF16_PARAMS) <= 0.01 * MACHINE_BF16_PARAMS
