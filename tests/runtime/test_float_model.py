"""Float32 on the model (cuda.softfloat's integer routines): one warp of the suite's SAXPY
(one fused multiply-add per element, rounded once) with engine="model-check", every token
equal to the interpreter's and the output equal to the numpy float32 oracle bit for bit.
The other float kernels (dot with atomicAdd, shared-memory reduction, tiled matrix
product, vector add) run the same way in benchmarks/bench_float_model.py (thousands of
tokens each: outside CI's budget)."""

import numpy as np
import pytest

import qgpu.runtime  # noqa: F401  (registers the model's engines)
from qgpu import suite

pytestmark = pytest.mark.slow


def test_saxpy_one_warp_on_the_model():
    spec = {s.name: s for s in suite.load_suite()}["saxpy_f32"]
    launch = next(x for x in spec.launches if x["grid"] * x["block"] <= 4)
    outputs, expected, tokens = suite.run_case(spec, launch, engine="model-check")
    assert tokens > 500                       # ~40 machine blocks of integer code per fma
    for name, want in expected.items():
        assert outputs[name].view(np.uint32).tolist() == want.view(np.uint32).tolist()
