"""The compile cache: a second compile reads the same weights and thresholds back; any
change to the circuit or the shape compiles afresh; the progress line goes to stderr."""

import numpy as np

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import adder_machine, register_echo


def test_second_compile_comes_from_the_cache(tmp_path, capsys, monkeypatch):
    demo = adder_machine()
    monkeypatch.setenv("QGPU_PROGRESS", "1")   # the layer bar, also off a terminal
    first = compile_circuit(demo.circuit, LayerShape.small(), cache=tmp_path, progress=True)
    assert not first.from_cache
    err = capsys.readouterr().err
    assert f"qgpu compile {demo.circuit.name}" in err and "3/3" in err and "layer" in err
    monkeypatch.delenv("QGPU_PROGRESS")
    second = compile_circuit(adder_machine().circuit, LayerShape.small(), cache=tmp_path)
    assert second.from_cache and second.key == first.key
    assert second.weights.config == first.weights.config
    for name, tensor in first.weights.tensors.items():
        np.testing.assert_array_equal(second.weights[name], tensor)
    assert [(t.layer, t.unit, t.form, t.name) for t in second.thresholds] == \
        [(t.layer, t.unit, t.form, t.name) for t in first.thresholds]


def test_changes_miss_the_cache(tmp_path):
    base = compile_circuit(register_echo().circuit, LayerShape.small(), cache=tmp_path)
    other_shape = compile_circuit(register_echo().circuit, LayerShape.small(mlp=256),
                                  cache=tmp_path)
    other_circuit = compile_circuit(register_echo(bits=3).circuit, LayerShape.small(),
                                    cache=tmp_path)
    no_reuse = compile_circuit(register_echo().circuit, LayerShape.small(), cache=tmp_path,
                               reuse_dims=False)
    keys = {base.key, other_shape.key, other_circuit.key, no_reuse.key}
    assert len(keys) == 4 and not any(c.from_cache for c in (other_shape, other_circuit))
    assert len(list(tmp_path.glob("*.npz"))) == 4


def test_cache_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("QGPU_CACHE_DIR", str(tmp_path))
    compile_circuit(register_echo().circuit, LayerShape.small(), cache=False)
    assert not list(tmp_path.iterdir())
    compile_circuit(register_echo().circuit, LayerShape.small())
    assert len(list(tmp_path.glob("*.npz"))) == 1


def test_cache_round_trip_keeps_matrices_sparse(tmp_path):
    """Entries are read from and rebuilt into sparse tensors (never densified whole)."""
    from qgpu.model.sparse_tensor import SparseTensor

    demo = adder_machine()
    first = compile_circuit(demo.circuit, LayerShape.qwen35_2b(), cache=tmp_path)
    second = compile_circuit(adder_machine().circuit, LayerShape.qwen35_2b(), cache=tmp_path)
    assert second.from_cache
    sparse = [n for n, t in first.weights.tensors.items() if isinstance(t, SparseTensor)]
    assert sparse and all(isinstance(second.weights[n], SparseTensor) for n in sparse)
    for name in first.weights.tensors:
        np.testing.assert_array_equal(np.asarray(second.weights[name]),
                                      np.asarray(first.weights[name]))

