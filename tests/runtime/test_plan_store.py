"""runtime.compiled's engine-plan store, on a small model in a temporary cache directory
(the real machine's plan is exercised by every model launch): load_machine maps a stored
plan without compiling (`compiled` is built only when asked for), runs it bit for bit
like the engine it was stored from, compiles instead when the file is unreadable, and
keeps the 3 newest plans of a (shape, spec)."""

import os

import numpy as np
import pytest

from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.model import fast_native
from qgpu.model.fast import FastEngine
from qgpu.runtime import compiled as rc
from tests.model.hf_util import random_weights, tiny_config
from tests.model.test_fast import sparsify

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")
SHAPE, SPEC = LayerShape.small(), MachineSpec(slots=1, ops=("add",))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("QGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(rc, "_loaded", {})
    config = tiny_config(layer_types=["linear_attention"] * 3)
    engine = FastEngine(sparsify(random_weights(config, seed=21), 0.3, seed=22))
    machine = rc.ModelMachine(None, SPEC, engine, memory_at=(1, 0), shape=SHAPE)
    rc._store(machine, SHAPE)
    return engine, tmp_path


def test_load_machine_maps_the_stored_plan(store, monkeypatch):
    built, _ = store
    monkeypatch.setattr(rc, "compile_machine", lambda *a, **k: pytest.fail("compiled"))
    machine = rc.load_machine(SHAPE, SPEC)
    assert machine._compiled is None and machine.memory_at == (1, 0)
    assert machine.engine.weights is None and machine.engine.backend == "native"
    tokens = np.random.default_rng(23).integers(0, built.config.vocab_size, 40).tolist()
    a, b = built.new_state(), machine.engine.new_state()
    assert [built.step_greedy(a, t) for t in tokens] == \
        [machine.engine.step_greedy(b, t) for t in tokens]
    for i in a.recurrent:
        assert a.recurrent[i].tobytes() == b.recurrent[i].tobytes()


def test_an_unreadable_plan_is_compiled_instead(store, monkeypatch):
    rc.plan_path(SHAPE, SPEC).write_bytes(b"QGPUPLN2 truncated")
    monkeypatch.setattr(rc, "compile_machine", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("compiling")))
    with pytest.raises(RuntimeError, match="compiling"):
        rc.load_machine(SHAPE, SPEC)


def test_old_plans_are_forgotten(store):
    _, directory = store
    path = rc.plan_path(SHAPE, SPEC)
    which = path.name.split("-")[1]
    for k in range(4):  # plans of older sources, oldest first
        old = directory / f"plan-{which}-old{k}.qplan"
        old.write_bytes(b"")
        os.utime(old, (k, k))
    rc._forget_old_plans(path)
    left = sorted(p.name for p in directory.glob(f"plan-{which}-*.qplan"))
    assert left == sorted([path.name, f"plan-{which}-old3.qplan", f"plan-{which}-old2.qplan"])
