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


DIVIDE = """
__global__ void ratio(float *o, const float *x, const float *y) {
  int i = threadIdx.x;
  o[i] = (x[i] - y[i]) / (x[i] + y[i]);
}
"""


def test_division_one_warp_on_the_model():
    """The division sequence (26 restoring steps; used once, so inline) after the shared add
    routine (a - b and a + b), model-check: every token the interpreter's, the quotient
    IEEE's round-to-nearest (isa.f32), a denormal and a division by zero among them."""
    from qgpu import compile as compile_cuda
    from qgpu.isa import f32

    kernel = compile_cuda(DIVIDE, engine="model-check").get_function("ratio")
    x = np.array([1.0, -3.5, 1e-40, 7.0], np.float32)
    y = np.array([3.0, 0.25, 2.0, -7.0], np.float32)
    o = np.zeros(4, np.float32)
    kernel(1, 4, (o, x, y))
    xb, yb = x.view(np.uint32).tolist(), y.view(np.uint32).tolist()
    assert o.view(np.uint32).tolist() == [
        f32.div(f32.sub(a, b), f32.add(a, b)) for a, b in zip(xb, yb, strict=True)]
