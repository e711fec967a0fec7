"""The compiled machine's exactness report over a whole launch (prompt and trace through
the reference engine): every norm the identity, every signal ideal, integral logits, and
every threshold's margin at least 1e3 times its input's deviation."""

import pytest

from qgpu.analysis.circuit_report import circuit_report
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.runtime.compiled import load_machine
from tests.runtime.programs import MEMORY_PROGRAMS

pytestmark = pytest.mark.slow


def test_launch_is_exact_with_large_margins():
    machine = load_machine(progress=False)
    prog = assemble(MEMORY_PROGRAMS["same_word"])
    memory = [3 * a + 1 for a in range(8)]
    res = run_launch(prog, 1, 4, memory=memory)
    tokens = encode_prompt(prog, 1, 4, memory) + expected_trace(res.events)
    report = circuit_report(machine.compiled, tokens)
    assert report.exact, str(report)
    assert report.min_ratio >= 1e3 and report.min_logit_gap >= 2
