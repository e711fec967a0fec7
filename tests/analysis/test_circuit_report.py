"""The circuit report covers every threshold the compiler places, finds the demos exact
on both GDN paths with margins >= 1e3, and catches a circuit that is not."""

import math

import numpy as np
import pytest

from qgpu.analysis.circuit_report import circuit_report
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import Table
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS


@pytest.mark.parametrize("name", sorted(DEMOS))
@pytest.mark.parametrize("mode", ["recurrent", "chunked"])
def test_demos_are_exact_with_wide_margins(name, mode):
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    report = circuit_report(compiled, demo.stream(250, seed=7), mode=mode)
    assert report.exact, str(report)
    assert report.min_ratio >= 1e3 and report.min_logit_gap >= 2
    # every recorded threshold names the unit whose gate computes it
    assert len({(t.layer, t.unit) for t in compiled.thresholds}) == len(compiled.thresholds)
    for th in compiled.thresholds:
        gate = compiled.weights.layer(th.layer, "mlp.gate_proj.weight")[th.unit]
        for d, k in th.form.items():
            if d != compiled.plan.one:  # the one dim also carries the offset
                assert gate[d] == np.float32(th.gain * k)
    if mode == "recurrent":  # the decode path reads tables and counters exactly
        assert math.isinf(report.min_ratio) and report.max_deviation == 0


def test_report_catches_an_inexact_read():
    demo = DEMOS["register_echo"]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    table = next(n for n in compiled.plan.order if isinstance(n, Table))
    raw = compiled.plan.dims[table.reads[0].raw]
    compiled.weights["model.layers.0.linear_attn.out_proj.weight"][raw] *= np.float32(1.001)
    report = circuit_report(compiled, demo.stream(100, seed=1))
    assert not report.exact
    assert report.min_ratio < 1e3 and "restore" in report.worst
