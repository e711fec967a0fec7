"""validate.run and validate.report with a stand-in backend: matches, GPU differences and
GPU errors reach the report; the journal rebuilds the same report; the CLI's --rebuild."""

import argparse
import json

import numpy as np

import qgpu.validate.reference as ref
from qgpu.cli import validate_gpu
from qgpu.suite import KERNELS_DIR, load_kernel
from qgpu.validate.report import markdown, write_report
from qgpu.validate.run import report_from_journal, validate


class StandInBackend:
    """Answers with the oracle's outputs, except: one kernel's out[0] is off by one, and
    one kernel raises."""

    def __init__(self, reference, wrong, broken):
        self.reference, self.wrong, self.broken = reference, wrong, broken

    def device_info(self):
        return {"gpu": "Stand-in", "driver": "0", "compute_capability": "0.0"}

    def run(self, kernel, params, case, args):
        if case["kernel"] == self.broken:
            raise RuntimeError("NVRTC said no")
        outputs = ref.decode_outputs(case["oracle"])
        if case["kernel"] == self.wrong:
            name = next(p.name for p in params if p.pointer and not p.ctype.startswith("const"))
            outputs[name] = outputs[name].copy()
            outputs[name][0] += 1
        return outputs


def _reference(monkeypatch, names):
    monkeypatch.setattr(ref, "run_case",
                        lambda spec, launch, engine: (spec.oracle(launch), None, None))
    specs = [load_kernel(KERNELS_DIR / f"{name}.py") for name in sorted(names)]
    return ref.build_reference(specs)


def test_report_counts_matches_differences_and_errors(monkeypatch, tmp_path):
    reference = _reference(monkeypatch, {"dot", "reverse", "gcd_euclid"})
    backend = StandInBackend(reference, wrong="reverse", broken="gcd_euclid")
    report = validate(reference, backend, journal=tmp_path / "j.jsonl")
    n_dot = sum(c["kernel"] == "dot" for c in reference["cases"])
    assert report["cases_run"] == len(reference["cases"])
    assert report["cases_matched"] == n_dot
    assert report["kernels_run"] == 3 and report["kernels_matched"] == 1
    statuses = {c["kernel"]: c["status"] for c in report["cases"]}
    assert statuses == {"dot": "match", "reverse": "gpu_differs", "gcd_euclid": "error"}
    wrong = next(c for c in report["cases"] if c["kernel"] == "reverse")
    assert wrong["gpu_vs_interp"][0]["elements"][0]["index"] == 0
    assert wrong["outputs"]["gpu"] is not None and "inputs" in wrong
    text = markdown(report)
    assert "Stand-in" in text and "NVRTC said no" in text and "reverse[0" in text
    rebuilt = report_from_journal(tmp_path / "j.jsonl")
    assert rebuilt["cases"] == json.loads(json.dumps(report["cases"]))


def test_all_matching_report_says_so(monkeypatch, tmp_path):
    reference = _reference(monkeypatch, {"dot"})
    report = validate(reference, StandInBackend(reference, None, None),
                      kernels={"dot"})
    assert report["cases_matched"] == report["cases_run"] > 0
    assert "Every output array" in markdown(report)
    json_path, md_path = write_report(report, tmp_path / "out")
    assert json.loads(json_path.read_text())["kernels_matched"] == 1
    assert md_path.read_text().startswith("# qgpu suite on a real GPU")


def test_cli_rebuilds_a_report_from_a_journal(monkeypatch, tmp_path, capsys):
    reference = _reference(monkeypatch, {"dot"})
    validate(reference, StandInBackend(reference, "dot", None), journal=tmp_path / "j")
    parser = argparse.ArgumentParser()
    validate_gpu.add_arguments(parser)
    args = parser.parse_args(["--rebuild", str(tmp_path / "j"), "--out", str(tmp_path / "o")])
    assert validate_gpu.main(args) == 1
    assert "gpu_differs" in capsys.readouterr().out
    assert (tmp_path / "o" / "report.json").exists()
    assert np.all([c["status"] == "gpu_differs" for c in
                   json.loads((tmp_path / "o" / "report.json").read_text())["cases"]])


def test_report_says_which_cases_were_float(monkeypatch, tmp_path):
    reference = _reference(monkeypatch, {"dot", "dot_f32"})
    assert reference["kernels"]["dot_f32"]["float"] and not reference["kernels"]["dot"]["float"]
    report = validate(reference, StandInBackend(reference, "dot_f32", None))
    n = sum(c["kernel"] == "dot_f32" for c in reference["cases"])
    assert report["float_cases_run"] == n and report["float_cases_matched"] == 0
    assert report["float_kernels"] == ["dot_f32"]
    text = markdown(report)
    assert "| float launches matched / run | 0 / 2 (bit for bit; kernels: dot_f32) |" in text
    assert "dot_f32[0:g1b16] (float)" in text


def test_cli_prepares_suite_kernels_and_a_float_fuzz_sample(monkeypatch, tmp_path, capsys):
    from qgpu.validate import command

    # the named kernel alone (loading the whole suite parses every kernel with clang)
    monkeypatch.setattr(command, "load_suite",
                        lambda: [load_kernel(KERNELS_DIR / "vec_add_f32.py")])
    parser = argparse.ArgumentParser()
    validate_gpu.add_arguments(parser)
    out = tmp_path / "ref.json"
    args = parser.parse_args(["--prepare", str(out), "--kernels", "vec_add_f32",
                              "--float-fuzz", "2", "--float-fuzz-seed", "3"])
    assert validate_gpu.main(args) == 0
    document = ref.load_reference(out)
    fuzz = [k for k in document["kernels"] if k.startswith("ffuzz_")]
    assert "vec_add_f32" in document["kernels"] and 1 <= len(fuzz) <= 2
    assert all(k["float"] for k in document["kernels"].values())
    assert "computing with floats" in capsys.readouterr().out
