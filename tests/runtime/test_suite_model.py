"""Every launch of the kernel suite that fits the model machine (up to 4 warps and 4 CTAs:
suite.model_sized) runs on the compiled model with --check: the model's tokens equal the
interpreter's token for token, and the arrays read back from the model's state equal
the kernel's independent oracle. A launch whose kernel needs an operation the model
machine does not have yet is an expected, strict failure with the machine's own error
(it turns into a pass, and the strict xfail into a failure, when the operation is
added); so is a launch past the model machine's sizes (the tutorial-sized ones: the
model refuses them by name)."""

import numpy as np
import pytest

import qgpu.runtime  # noqa: F401  (registers the model's engines: run alone, nothing else does)
from qgpu import suite
from qgpu.circuit.machine.spec import SUPPORTED_OPS
from qgpu.cuda.shape import launch_shape
from qgpu.errors import LaunchError, ProgramError
from qgpu.isa import limits

pytestmark = pytest.mark.slow


def _ops(spec) -> set[str]:
    prog = suite.compiled_module(spec.source).get_function(spec.kernel).program
    return {ins.op for blk in prog.blocks for stage in blk.stages for ins in stage}


def _float(spec) -> bool:
    """A float kernel: thousands of tokens per launch (its float operations are integer
    routines, cuda.softfloat); they run in test_float_model.py (one sample) and
    benchmarks/float_model.py (every launch), outside this CI-sized sweep."""
    return ".f32" in suite.compiled_module(spec.source).ptx


def _cases():
    for spec in suite.load_suite():
        if _float(spec):
            continue
        missing = sorted(_ops(spec) - set(SUPPORTED_OPS))
        marks = [pytest.mark.xfail(strict=True, raises=ProgramError,
                                   reason=f"not in the model machine yet: {missing}")
                 ] if missing else []
        for i, launch in enumerate(spec.launches):
            big = [] if suite.model_sized(spec, launch) else [pytest.mark.xfail(
                strict=True, raises=(LaunchError, ProgramError),
                reason="past the model machine's sizes (isa.limits MODEL_*)")]
            yield pytest.param(spec, i, id=spec.case_id(i), marks=marks or big)


CASES = list(_cases())


def test_the_suite_has_multi_warp_launches():
    shapes = [launch_shape(p.values[0].launches[p.values[1]]["grid"],
                           p.values[0].launches[p.values[1]]["block"]) for p in CASES
              if not p.marks]
    warps = [limits.launch_warps(s.ctas, s.threads) for s in shapes]
    assert len(CASES) >= 190 and max(warps) == 4 and warps.count(1) >= 28


@pytest.mark.parametrize("spec,index", CASES)
def test_launch_on_the_model(spec, index):
    outputs, expected, tokens = suite.run_case(spec, spec.launches[index], engine="model-check")
    assert tokens
    for name, want in expected.items():
        np.testing.assert_array_equal(outputs[name], want, err_msg=name)
