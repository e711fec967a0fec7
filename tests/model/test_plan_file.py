"""The native plan stored in a plan file and mapped back (model.plan_file): the engine
over the mapped plan, without weights, gives the same logits, greedy tokens and states,
bit for bit, as the engine built from the weights; the kernel's struct layout is the
ctypes side's; a file that is not a plan is refused."""

import ctypes

import numpy as np
import pytest

from qgpu.model import fast_native
from qgpu.model.fast import FastEngine
from qgpu.model.plan_file import load_plan, save_plan

from .hf_util import random_weights, tiny_config
from .test_fast import sparsify

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")


def test_mapped_plan_runs_bit_identically(tmp_path):
    config = tiny_config(layer_types=["linear_attention"] * 3)
    weights = sparsify(random_weights(config, seed=7), 0.2, seed=8)
    weights.tensors["model.embed_tokens.weight"][3, :5] = -0.0  # kept as entries
    built = FastEngine(weights)
    fields, meta = load_plan(save_plan(tmp_path / "p.qplan", built.plan.fields, {"x": [1]}))
    assert meta == {"x": [1]}
    assert not any(v.flags.writeable for v in fields.values()
                   if isinstance(v, np.ndarray) and v.size)  # views of the mapping
    mapped = FastEngine.from_plan(config, fields)
    assert mapped.weights is None
    tokens = np.random.default_rng(9).integers(0, config.vocab_size, 60)
    a, b = built.new_state(), mapped.new_state()
    np.testing.assert_array_equal(built.prefill(a, tokens[:20]), mapped.prefill(b, tokens[:20]))
    for t in tokens[20:40]:
        assert built.step_greedy(a, int(t)) == mapped.step_greedy(b, int(t))
    assert built.forced_greedy(a, tokens[40:]) == mapped.forced_greedy(b, tokens[40:])
    for i in a.recurrent:
        assert a.recurrent[i].tobytes() == b.recurrent[i].tobytes()
        assert a.conv[i].tobytes() == b.conv[i].tobytes()
    assert np.array_equal(mapped.conv_channels(1), built.conv_channels(1))


def test_not_a_plan_file(tmp_path):
    path = tmp_path / "x.qplan"
    path.write_bytes(b"not a plan at all")
    with pytest.raises(ValueError, match="not a qgpu plan file"):
        load_plan(path)


def test_struct_layout_is_checked_against_c():
    lib = fast_native.load_kernel()
    fast_native.check_layout(lib)  # the compiler's offsets are the ctypes Structures'
    layout = dict(item.split("=") for item in lib.qgpu_layout().decode().split())
    assert int(layout["Model.head"]) == fast_native.Model.head.offset
    assert int(layout["Layer"]) == ctypes.sizeof(fast_native.Layer)

    class Drifted(ctypes.Structure):  # a field added on one side only is caught
        _fields_ = [*fast_native.Csc._fields_, ("extra", ctypes.c_int32)]

    original = fast_native.Csc
    try:
        fast_native.Csc = Drifted
        with pytest.raises(RuntimeError, match="struct layout differs"):
            fast_native.check_layout(lib)
    finally:
        fast_native.Csc = original
