"""model.weights: which tensors are held sparse, and that every engine computes the same
bits from a compiled model whether its tensors are held sparse or dense."""

from __future__ import annotations

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import adder_machine
from qgpu.model.config import ModelConfigError
from qgpu.model.fast import FastEngine
from qgpu.model.fast_native import load_kernel
from qgpu.model.reference import ReferenceEngine
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights, stored_form

from .hf_util import tiny_config


@pytest.fixture(scope="module")
def compiled():
    demo = adder_machine()
    weights = compile_circuit(demo.circuit, LayerShape.qwen35_2b(), cache=False).weights
    return demo, weights


def held_dense(weights: QwenWeights) -> QwenWeights:
    """The same weights with every tensor a dense numpy array."""
    out = weights.copy()
    for name in out.tensors:
        out.tensors[name] = np.asarray(weights[name])
    return out


def test_forms():
    config = tiny_config(vocab_size=2048)  # the embedding and head are 2048 x 64
    w = QwenWeights.zeros(config)
    for name, t in w.tensors.items():
        big = t.ndim == 2 and t.size >= 1 << 16
        assert isinstance(t, SparseTensor) == big, name
    assert isinstance(stored_form(np.eye(300, dtype=np.float32)), SparseTensor)
    assert isinstance(stored_form(np.ones((300, 300))), np.ndarray)
    assert isinstance(stored_form(SparseTensor.zeros((3, 3))), np.ndarray)
    random = QwenWeights.random(config)
    assert not any(random.is_sparse(k) for k in random.tensors)
    with pytest.raises(ModelConfigError):
        w[EMBED] = SparseTensor.zeros((3, 3))


def test_compiled_weights_are_sparse_and_read_as_before(compiled):
    _, w = compiled
    dense = held_dense(w)
    assert w.is_sparse("model.layers.0.mlp.gate_proj.weight")
    assert w.is_sparse("model.layers.0.linear_attn.in_proj_qkv.weight")
    assert w.nbytes < dense.nbytes / 10   # 19x smaller for this demo (hidden 63)
    assert w.nonzero_count() == dense.nonzero_count()
    for name in w.tensors:
        assert np.array_equal(w.dense(name), dense[name])
        if w[name].ndim == 2:
            assert np.array_equal(w.csr(name).todense(), dense[name])
    assert [w.layer_is_zero_attention(i) for i in range(w.config.num_hidden_layers)] == \
        [dense.layer_is_zero_attention(i) for i in range(w.config.num_hidden_layers)]


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_fast_engine_bit_identical_sparse_or_dense(compiled, backend):
    demo, w = compiled
    if backend == "native" and load_kernel() is None:
        pytest.skip("no C compiler")
    tokens = demo.stream(60, seed=3)
    runs = []
    for weights in (w, held_dense(w)):
        engine = FastEngine(weights, backend=backend)
        state = engine.new_state()
        logits = engine.prefill(state, tokens, mode="recurrent")
        runs.append((logits, state, engine.generate(tokens[:5], 20)))
    (la, sa, ga), (lb, sb, gb) = runs
    assert np.array_equal(la.view(np.uint32), lb.view(np.uint32)) and ga == gb
    for i in sa.recurrent:
        assert np.array_equal(sa.recurrent[i].view(np.uint32), sb.recurrent[i].view(np.uint32))
    assert la.argmax(axis=1).tolist() == demo.answers(tokens)


def test_reference_bit_identical_and_sees_later_writes(compiled):
    demo, w = compiled
    w = w.copy()
    tokens = demo.stream(30, seed=1)
    outs = []
    for engine in (ReferenceEngine(w), ReferenceEngine(held_dense(w)),
                   ReferenceEngine(w, dense_cache_bytes=0)):
        state = engine.new_state()
        outs.append((engine.prefill(state, tokens), state))
    for logits, state in outs[1:]:
        assert np.array_equal(logits.view(np.uint32), outs[0][0].view(np.uint32))
        for i in state.recurrent:
            assert np.array_equal(state.recurrent[i], outs[0][1].recurrent[i])
    engine = ReferenceEngine(w)
    before = engine.step(engine.new_state(), tokens[0])
    w[LM_HEAD][:, :] = 0.0  # a write after the engine cached the head densely
    after = engine.step(engine.new_state(), tokens[0])
    assert np.any(before) and not np.any(after)
