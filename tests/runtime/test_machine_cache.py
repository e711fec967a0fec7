"""runtime.machine's per-process machines: release_machines drops all but the default
machine (or all of them), loaded_machine finds a loaded one without compiling."""

from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.runtime import machine as rm


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
