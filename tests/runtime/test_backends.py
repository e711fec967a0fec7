"""The fast engine's native kernel against its numpy backend on the machine circuit
(a one-row table overwritten on consecutive tokens read back wrong in the native kernel
between commits 2991b42 and 9fedd6f: this is the machine's own regression test)."""

import numpy as np
import pytest

from qgpu.isa.asm import assemble
from qgpu.model.fast import FastEngine
from qgpu.protocol import encode_prompt
from qgpu.runtime.compiled import load_machine

pytestmark = pytest.mark.slow


def test_native_kernel_agrees_with_numpy_on_the_machine():
    machine = load_machine(progress=False)
    try:
        native = FastEngine(machine.compiled.weights, backend="native")
    except RuntimeError:
        pytest.skip("no native kernel here")
    numpy = FastEngine(machine.compiled.weights, backend="numpy")
    prog = assemble("block 0:\n  mov r1, 7\n  add r2, r1, 5\n  exit\n")
    a, b = native.new_state(), numpy.new_state()
    for token in encode_prompt(prog, 1, 4):
        assert np.array_equal(native.step(a, token), numpy.step(b, token))
