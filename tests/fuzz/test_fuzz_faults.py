"""The fault fuzzer (qgpu.fuzz.faults) on the interpreter: random programs with wild
addresses and divergent barriers; every fault's TRAP record decodes back to the
interpreter's record and error. (On the model: `python -m qgpu.fuzz.faults --model
--no-barriers`, and tests/runtime/test_faults_model.py.)"""

from qgpu.fuzz.faults import campaign


def test_fault_fuzzer_on_the_interpreter():
    out = campaign(400, seed=14)
    assert out["mismatches"] == 0
    kinds = out["kinds"]
    for kind in ("misaligned-global", "out-of-bounds-global", "misaligned-shared",
                 "out-of-bounds-shared", "barrier", "clean"):
        assert kinds.get(kind, 0) >= 10, kinds
