"""Launches that do not finish on the model (issue 14, point 2; issue 27): `while (1) {}`
ends with the interpreter's own budget error, word for word, after DEFAULT_MODEL_BUDGET
blocks (25,000: 50,000 generated tokens, bounded), and --budget N sets the limit on
both engines."""

import time

import pytest

import qgpu
from qgpu.errors import MachineError
from qgpu.runtime.generate import DEFAULT_MODEL_BUDGET

pytestmark = pytest.mark.slow

LOOP = "__global__ void k(int *o) { while (1) {} }\n"


def _error(kernel, **kw) -> str:
    import numpy as np

    with pytest.raises(MachineError) as err:
        kernel(1, 4, [np.zeros(4, np.int32)], **kw)
    return str(err.value)


def test_while_1_ends_with_the_interpreters_budget_error():
    kernel = qgpu.compile(LOOP, filename="loop.cu", engine="interp").get_function("k")
    want = _error(kernel, budget=DEFAULT_MODEL_BUDGET)
    _error(kernel, engine="model", budget=5)          # the machine is loaded (and cached)
    t0 = time.perf_counter()
    got = _error(kernel, engine="model")
    seconds = time.perf_counter() - t0
    assert got == want and "budget exceeded" in got and "runaway" not in got
    assert DEFAULT_MODEL_BUDGET >= 20_000 and f"{DEFAULT_MODEL_BUDGET} blocks" in got
    # a sanity bound, not a speed figure: 50,000 tokens on a loaded 2-core VM
    assert seconds < 900, f"the endless launch took {seconds:.1f} s on the model"
    assert _error(kernel, engine="model", budget=30) == _error(kernel, budget=30)
