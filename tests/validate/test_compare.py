"""validate.compare: element differences with their indices, and the case status for each
pattern of agreement between GPU, interpreter and oracle."""

import numpy as np

from qgpu.validate.compare import MAX_DETAILS, compare_case, diff_arrays, diff_outputs

A = np.array([1, 2, 3, 4], np.int32)


def test_equal_arrays_have_no_diff():
    assert diff_arrays("x", A, A.copy()) is None


def test_differences_name_index_and_values():
    b = A.copy()
    b[2] = 99
    diff = diff_arrays("x", b, A)
    assert diff == {"array": "x", "count": 1, "size": 4,
                    "elements": [{"index": 2, "got": 99, "want": 3}]}


def test_details_are_capped_but_the_count_is_not():
    diff = diff_arrays("x", np.arange(40, dtype=np.int32), np.zeros(40, np.int32))
    assert diff["count"] == 39 and len(diff["elements"]) == MAX_DETAILS


def test_dtype_and_shape_and_missing_arrays_differ():
    assert "dtype" in diff_arrays("x", A.view(np.uint32), A)["problem"]
    assert "shape" in diff_arrays("x", A[:3], A)["problem"]
    assert diff_outputs({"x": A}, {"x": A, "y": A}) == [
        {"array": "y", "problem": "missing on one side"}]


def test_case_status_for_each_agreement_pattern():
    good, bad = {"x": A}, {"x": A + 1}
    assert compare_case(good, good, good)["status"] == "match"
    assert compare_case(good, bad, good)["status"] == "interp_differs"
    assert compare_case(good, good, bad)["status"] == "oracle_differs"
    assert compare_case(bad, good, good)["status"] == "gpu_differs"
    assert compare_case(None, good, good)["status"] == "error"
    assert compare_case(good, None, good)["status"] == "error"


def test_floats_compare_bit_for_bit():
    def f(*bits):
        return np.array(bits, np.uint32).view(np.float32)

    assert diff_arrays("x", f(0x7FC00001, 0x3F800000), f(0x7FC00001, 0x3F800000)) is None
    diff = diff_arrays("x", f(0x80000000, 0x7FFFFFFF), f(0, 0x7FC00000))
    assert diff["count"] == 2                                    # -0 vs +0, NaN payloads
    assert diff["elements"][0] == {"index": 0, "got": "-0.0 (0x80000000)",
                                   "want": "0.0 (0x00000000)"}
