"""validate.reference: arrays and arguments survive the JSON file exactly; a case records
the suite's inputs, the oracle, and the interpreter's outputs or its error."""

import numpy as np
import pytest

import qgpu.validate.reference as ref
from qgpu.suite import load_suite

SUITE = {s.name: s for s in load_suite()}


def test_arrays_round_trip_with_their_dtype():
    for array in (np.array([-2**31, -1, 0, 2**31 - 1], np.int32),
                  np.array([0, 2**32 - 1, 12345], np.uint32)):
        back = ref.decode_array(ref.encode_array(array))
        assert back.dtype == array.dtype and np.array_equal(back, array)


def test_float_byte_short_and_bool_arrays_round_trip_bit_for_bit():
    floats = np.array([0x7FC00001, 0xFFFFFFFF, 0x80000000, 0x7F800000, 1], np.uint32)
    for array in (floats.view(np.float32), np.array([0, 255, 7], np.uint8),
                  np.array([-128, 127], np.int8), np.array([-32768, 5], np.int16),
                  np.array([65535, 0], np.uint16), np.array([True, False, True])):
        stored = ref.encode_array(array)
        back = ref.decode_array(stored)
        assert back.dtype == array.dtype and back.tobytes() == array.tobytes()
    assert ref.encode_array(floats.view(np.float32))["values"][0] == 0x7FC00001   # bits
    params = ref.params_from_records([{"name": "a", "ctype": "float", "pointer": False,
                                       "unsigned": False, "dtype": "float32"}])
    stored = ref.encode_args(params, {"a": np.float32(-0.0)})
    back = ref.decode_args(stored)["a"]
    assert isinstance(back, np.float32) and np.signbit(back)


def test_other_arrays_are_refused():
    with pytest.raises(ValueError, match="int64"):
        ref.encode_array(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="float64"):
        ref.encode_array(np.zeros(3, np.float64))


def test_kernel_records_say_which_compute_with_floats():
    assert ref.computes_floats(SUITE["dot_f32"].source)
    assert not ref.computes_floats(SUITE["dot"].source)


def test_args_round_trip_in_the_signature_order():
    spec = SUITE["saxpy_int"]
    launch = spec.launches[1]
    stored = ref.encode_args(spec.params, launch["args"])
    assert list(stored) == ["alpha", "x", "y", "n"]
    back = ref.decode_args(stored)
    assert back["alpha"] == launch["args"]["alpha"] and back["n"] == launch["args"]["n"]
    assert np.array_equal(back["x"], launch["args"]["x"])
    params = ref.params_from_records(ref.param_records(spec.params))
    assert params == spec.params


def test_reference_case_records_interpreter_outputs(monkeypatch):
    spec = SUITE["dot"]

    def fake_run_case(spec_, launch, engine):
        assert engine == "interp"
        return {"a": launch["args"]["a"], "b": launch["args"]["b"],
                "out": np.array([32], np.int32)}, None, 47

    monkeypatch.setattr(ref, "run_case", fake_run_case)
    case = ref.reference_case(spec, 0)
    assert case["id"] == "dot[0:g1b3]" and case["grid"] == 1 and case["block"] == 3
    assert case["args"]["a"] == {"dtype": "int32", "values": [1, 2, 3]}
    assert case["oracle"]["out"]["values"] == [32]
    assert case["interp"]["out"]["values"] == [32] and case["tokens"] == 47


def test_reference_case_records_an_interpreter_error(monkeypatch):
    def failing_run_case(spec_, launch, engine):
        raise RuntimeError("ROM overflow")

    monkeypatch.setattr(ref, "run_case", failing_run_case)
    case = ref.reference_case(SUITE["dot"], 0)
    assert case["interp"] is None and "ROM overflow" in case["interp_error"]


def test_reference_document_round_trips_through_a_file(monkeypatch, tmp_path):
    monkeypatch.setattr(ref, "run_case",
                        lambda spec, launch, engine: (spec.oracle(launch), None, None))
    specs = [SUITE["reverse"], SUITE["vote_any_all"]]
    document = ref.build_reference(specs)
    ref.save_reference(document, tmp_path / "r.json")
    back = ref.load_reference(tmp_path / "r.json")
    assert back["kernels"]["reverse"]["source"] == SUITE["reverse"].source
    assert len(back["cases"]) == sum(len(s.launches) for s in specs)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a"):
        ref.load_reference(tmp_path / "bad.json")
