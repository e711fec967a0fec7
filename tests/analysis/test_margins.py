"""analysis.margins (the fast instrumented run) agrees with report.circuit_report (the
reference engine's) on the demos, sees an injected deviation where it is, and its silu
bounds are the engines' own."""

import math

import numpy as np
import pytest

from qgpu.analysis.circuit_report import circuit_report
from qgpu.analysis.margins import SILU_ID, SILU_ZERO, margin_report
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import Table
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS
from qgpu.model import layers

F32 = np.float32


def test_silu_bounds_are_where_silu_turns_exact():
    assert layers.silu(F32(SILU_ID)) == F32(SILU_ID)
    below = np.nextafter(F32(SILU_ID), F32(0))
    assert layers.silu(below) != below
    assert layers.silu(F32(SILU_ZERO)) == 0
    assert layers.silu(np.nextafter(F32(SILU_ZERO), F32(0))) != 0
    assert 16.6 < SILU_ID < 16.7 and -88.8 < SILU_ZERO < -88.7


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demos_exact_as_the_reference_report_finds(name):
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    tokens = demo.stream(250, seed=7)
    report = margin_report(compiled, tokens, chunk=64)  # several chunks share the state
    reference = circuit_report(compiled, tokens)
    assert report.positions == len(tokens) and report.evaluations == reference.evaluations
    assert report.exact and math.isinf(report.ratio) and reference.max_deviation == 0
    assert report.max_signal_deviation.value == 0 and not report.unchecked
    assert report.norm_failures == 0 and report.min_logit_gap == reference.min_logit_gap
    # the smallest margin is the off side of a step's 0.75 unit: 1/4 - 88.72 / 1024
    assert report.min_margin.value == pytest.approx(0.25 + SILU_ZERO / 1024)


def test_an_injected_deviation_is_seen_where_it_is():
    demo = DEMOS["register_echo"]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    table = next(n for n in compiled.plan.order if isinstance(n, Table))
    raw = compiled.plan.dims[table.reads[0].raw]
    compiled.weights["model.layers.0.linear_attn.out_proj.weight"][raw] *= F32(1 + 2 ** -12)
    tokens = demo.stream(100, seed=1)
    report = margin_report(compiled, tokens)
    reference = circuit_report(compiled, tokens)
    assert report.max_deviation.value == pytest.approx(reference.max_deviation)
    assert report.max_deviation.value == pytest.approx(2 ** -12, rel=1e-3)
    assert "restore" in report.max_deviation.what and report.max_deviation.layer == 0
    assert report.max_read_deviation.what == table.reads[0].raw.name
    assert report.ratio == pytest.approx(report.min_margin.value * 2 ** 12, rel=1e-3)
    assert not report.exact


def test_teacher_forcing_checks_every_next_token():
    demo = DEMOS["register_echo"]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    prompt = demo.stream(40, seed=2)
    tokens = prompt + demo.continuation(prompt, 12)
    report = margin_report(compiled, tokens, len(prompt), chunk=16)
    assert report.forced == 12 and report.wrong == 0 and report.exact
    bad = list(tokens)
    bad[-5] = next(t for t in range(compiled.circuit.vocab_size) if t != bad[-5])
    report = margin_report(compiled, bad, len(prompt))
    assert report.forced == 12 and report.wrong >= 1 and not report.exact
