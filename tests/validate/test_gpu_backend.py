"""validate.gpu.CupyBackend without a GPU: a stand-in `cupy` module whose RawModule runs
the NVRTC source (prelude included) on qgpu's own pipeline. This checks what the backend
does around the launch -- source and options handed to NVRTC, the name-expression and
extern "C" paths, argument types, copies to and from the device -- on real suite
kernels."""

import sys
import types

import numpy as np
import pytest

import qgpu
from qgpu.suite import load_suite
from qgpu.validate.gpu import CupyBackend
from qgpu.validate.reference import decode_args, decode_outputs, reference_case

SUITE = {s.name: s for s in load_suite()}


def _stand_in_cupy(calls, refuse_name_expressions=False):
    cupy = types.ModuleType("cupy")

    class RawModule:
        def __init__(self, code, options=(), name_expressions=None):
            if refuse_name_expressions and name_expressions:
                raise RuntimeError("name expressions unsupported")
            calls.append({"code": code, "options": options, "names": name_expressions})
            self.module = qgpu.compile(code, engine="interp")

        def get_function(self, name):
            kernel = self.module.get_function(name)

            def launch(grid, block, args):
                assert isinstance(grid, tuple) and isinstance(block, tuple)
                for a in args:   # raw launches need 32-bit scalars, never Python ints
                    assert isinstance(a, np.ndarray | np.int32 | np.uint32 | np.float32), \
                        type(a)
                values = [a if isinstance(a, np.ndarray) and a.ndim == 1 else
                          float(a) if isinstance(a, np.float32) else int(a) for a in args]
                kernel(grid[0], block[0], values)
            return launch

    cupy.RawModule = RawModule
    cupy.asarray = lambda a: np.array(a, copy=True)
    cupy.asnumpy = lambda a: np.array(a, copy=True)
    cupy.cuda = types.SimpleNamespace(Device=lambda n: types.SimpleNamespace(
        synchronize=lambda: None))
    return cupy


@pytest.mark.parametrize("refuse", [False, True], ids=["name_expressions", "extern_c"])
@pytest.mark.parametrize("name", ["dot", "saxpy_u32_wrap", "vote_ballot_group", "saxpy_f32"])
def test_backend_runs_suite_cases_through_the_stand_in(monkeypatch, name, refuse):
    calls = []
    monkeypatch.setitem(sys.modules, "cupy", _stand_in_cupy(calls, refuse))
    spec = SUITE[name]
    backend = CupyBackend()
    kernel = {"entry": spec.kernel, "source": spec.source}
    for index, launch in enumerate(spec.launches):
        case = reference_case(spec, index)
        outputs = backend.run(kernel, spec.params, case, decode_args(case["args"]))
        expected = decode_outputs(case["oracle"])
        assert sorted(outputs) == sorted(expected)
        for key, value in expected.items():
            assert outputs[key].dtype == value.dtype and np.array_equal(outputs[key], value)
        assert np.array_equal(launch["args"][spec.params[0].name],
                              decode_args(case["args"])[spec.params[0].name])
    assert len(calls) == 1                     # compiled once, reused for every launch
    assert "typedef unsigned int uint32_t;" in calls[0]["code"]
    assert backend.function(kernel)[1] == ("extern_c" if refuse else "name_expressions")
    if refuse:
        assert f'extern "C" __global__ void {spec.kernel}(' in calls[0]["code"]


def test_backend_runs_float_fuzz_programs_through_the_stand_in(monkeypatch):
    """The float fuzzer's reference cases as the GPU side gets them: the source NVRTC
    compiles (no qgpu-only names), float32 arrays in and out, bit for bit."""
    from qgpu.fuzz.float_kernels import fuzz_reference
    from qgpu.validate.reference import params_from_records
    from qgpu.validate.run import validate

    document = fuzz_reference(3, seed=5)
    assert document["cases"] and all(k["float"] for k in document["kernels"].values())
    monkeypatch.setitem(sys.modules, "cupy", _stand_in_cupy([]))
    backend = CupyBackend()
    case = document["cases"][0]
    kernel = document["kernels"][case["kernel"]]
    outputs = backend.run(kernel, params_from_records(kernel["params"]), case,
                          decode_args(case["args"]))
    assert outputs["fo"].dtype == np.float32
    for name, want in decode_outputs(case["oracle"]).items():
        assert outputs[name].tobytes() == want.tobytes(), name

    class Stand:                      # the stand-in GPU through the whole validation loop
        def device_info(self):
            return {"gpu": "stand-in"}

        def run(self, kernel, params, case, args):
            return backend.run(kernel, params, case, args)

    report = validate(document, Stand())
    assert report["float_cases_run"] == report["float_cases_matched"] == len(document["cases"])
