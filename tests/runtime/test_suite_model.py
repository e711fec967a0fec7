"""Every one-warp launch of the kernel suite (grid 1, block <= 4) runs on the compiled
model with --check: the model's tokens equal the interpreter's token for token, and the
arrays read back from the model's state equal the kernel's independent oracle."""

import numpy as np
import pytest

from qgpu import suite

pytestmark = pytest.mark.slow

CASES = [(spec, i) for spec in suite.load_suite() for i, launch in enumerate(spec.launches)
         if suite.launch_warps(launch["grid"], launch["block"]) == 1]


def test_the_suite_has_one_warp_launches():
    assert len(CASES) >= 28


@pytest.mark.parametrize("spec,index", CASES, ids=[s.case_id(i) for s, i in CASES])
def test_one_warp_launch_on_the_model(spec, index):
    outputs, expected, tokens = suite.run_case(spec, spec.launches[index], engine="model-check")
    assert tokens
    for name, want in expected.items():
        np.testing.assert_array_equal(outputs[name], want, err_msg=name)
