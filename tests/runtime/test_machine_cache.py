"""The machines a process keeps: runtime.compiled's release_machines drops all but the
default machine (or all of them), loaded_machine finds a loaded one without compiling;
the CUDA API's engine registry does not keep a registered machine alive."""

import gc
import weakref

import pytest

from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.cuda.api import ENGINES
from qgpu.runtime import compiled as rm
from qgpu.runtime.checkpoint import CheckpointMachineError, engine_name


def test_release_keeps_only_the_default_machine(monkeypatch):
    default = (LayerShape.qwen35_2b(), rm.DEFAULT_SPEC, rm.DEFAULT_BACKEND)
    other = (LayerShape.qwen35_2b(), MachineSpec(slots=1, ops=("add",)), rm.DEFAULT_BACKEND)
    fake = {default: "default machine", other: "subset machine"}
    monkeypatch.setattr(rm, "_loaded", dict(fake))
    assert rm.loaded_machine() == "default machine"
    assert rm.loaded_machine(MachineSpec(slots=1, ops=("sub",))) is None
    assert rm.release_machines() == 1
    assert rm._loaded == {default: "default machine"}
    assert rm.release_machines(keep_default=False) == 1
    assert rm._loaded == {} and rm.loaded_machine() is None


def test_the_engine_registry_does_not_keep_a_machine_alive():
    """engine_name registers a runner that refers to its machine weakly: once the owner
    drops the machine (a few GiB) it is freed, and the stale name says so."""
    class Machine:
        directory = None

    machine = Machine()
    name = engine_name(machine, check=True)
    held = weakref.ref(machine)
    del machine
    gc.collect()
    assert held() is None
    with pytest.raises(CheckpointMachineError, match="freed"):
        ENGINES[name](None, 1, 4, [], None)
    del ENGINES[name]
