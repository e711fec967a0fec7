"""The kernel suite on the reference interpreter: every (kernel, launch) of kernels/
through the public launch API (qgpu.compile -> get_function -> launch), every pointer
argument equal to the kernel's independent oracle."""

import numpy as np
import pytest

from qgpu.suite import load_suite, run_case

SUITE = load_suite()
CASES = [(spec, index) for spec in SUITE for index in range(len(spec.launches))]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "index"), CASES,
                         ids=[spec.case_id(index) for spec, index in CASES])
def test_kernel_matches_oracle_on_interpreter(spec, index):
    outputs, expected, _tokens = run_case(spec, spec.launches[index], engine="interp")
    for name, want in expected.items():
        got = outputs[name]
        assert got.dtype == want.dtype, name
        if got.dtype.kind == "f":     # bit for bit: a NaN equals itself, -0 is not +0
            got, want = got.view(np.uint32), want.view(np.uint32)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (
            f"{spec.case_id(index)}: {name} differs at {bad.tolist()[:8]}: "
            f"got {got[bad[:8]].tolist()}, oracle {want[bad[:8]].tolist()}")
