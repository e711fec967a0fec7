"""Issue 29: hypothesis over the launch API's argument space (Python types, numpy dtypes,
shapes, strides, grid/block forms, budgets): a launch either runs and gives the
interpreter's answer computed independently, or raises a QgpuError before any array is
written; never another exception."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qgpu.cuda import compile as compile_cuda
from qgpu.cuda.shape import launch_shape
from qgpu.errors import QgpuError

KERNEL = compile_cuda("__global__ void k(const int *a, int *o, int x) "
                      "{ o[threadIdx.x] = a[threadIdx.x] + x; }\n").get_function("k")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

DTYPES = [np.int32, np.uint32, np.int64, np.float32, np.float64, np.int8, np.uint16,
          np.bool_, np.complex64, object]


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from([(4,), (8,), (0,), (2, 2), (4, 1), (3,), (200,)]))
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)
    if draw(st.booleans()) and a.ndim == 1 and a.size >= 8:
        a = a[::2]  # a strided view
    return a


scalars = st.one_of(st.integers(-2**33, 2**33), st.floats(), st.none(), st.text(max_size=3),
                    st.booleans(), st.just(np.int32(5)), st.just(np.uint32(5)))
dims = st.one_of(st.integers(-2, 40), st.tuples(st.integers(0, 9)),
                 st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers(0, 2))),
                 st.none(), st.floats(), st.just("4"), st.lists(st.integers(1, 4), max_size=3))


valid_array = st.builds(lambda n, d: np.arange(n).astype(d), st.integers(4, 16),
                        st.sampled_from([np.int32, np.uint32]))
VALID = {"a": valid_array, "o": valid_array, "x": st.integers(-100, 100),
         "grid": st.sampled_from([1, 2, (1,), [2]]),
         "block": st.sampled_from([1, 3, 4, (4,), (4, 1)]),
         "budget": st.sampled_from([None, 5000]),
         "form": st.sampled_from(["tuple", "list", "dict"])}
ANYTHING = {"a": st.one_of(arrays(), scalars, st.lists(st.integers(0, 9), max_size=5)),
            "o": st.one_of(arrays(), scalars), "x": scalars, "grid": dims, "block": dims,
            "budget": st.one_of(st.integers(-3, 3), st.floats(), st.text(max_size=2)),
            "form": st.sampled_from(["generator", "none", "str"])}


@st.composite
def launches(draw):
    """Every argument valid but those in a small random set (often empty: launches run)."""
    broken = draw(st.sets(st.sampled_from(sorted(VALID)), max_size=3))
    return {k: draw(ANYTHING[k] if k in broken else VALID[k]) for k in VALID}


@SETTINGS
@given(call=launches())
def test_any_launch_arguments_run_or_raise_a_qgpu_error(call):
    a, o, x, grid, block, budget, form = (call[k] for k in ("a", "o", "x", "grid", "block",
                                                           "budget", "form"))
    values = (a, o, x)
    args = {"tuple": values, "list": list(values), "dict": dict(zip("aox", values, strict=True)),
            "generator": (v for v in values), "none": None, "str": "aox"}[form]
    before = o.copy() if isinstance(o, np.ndarray) else None
    try:
        res = KERNEL(grid, block, args, engine="interp", budget=budget)
    except QgpuError:
        if before is not None and before.dtype != object:
            assert np.array_equal(o, before, equal_nan=True)  # nothing written
        return
    n = launch_shape(grid, block).block[0]  # every thread writes o[threadIdx.x]: 0..block.x
    assert res.block == launch_shape(grid, block).threads
    RAN.append(res)
    want = (np.asarray(a).reshape(-1)[:n].astype(np.int64) + int(x)) & 0xFFFFFFFF
    got = o.reshape(-1)[:n].astype(np.int64) & 0xFFFFFFFF
    assert np.array_equal(got, want)
    assert np.array_equal(o.reshape(-1)[n:], before.reshape(-1)[n:])


RAN: list = []


def test_the_property_ran_launches():
    """The property above is not all refusals: many of its launches run."""
    RAN.clear()
    test_any_launch_arguments_run_or_raise_a_qgpu_error()
    assert len(RAN) > 30
