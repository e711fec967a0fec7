"""merge.size's prediction held to a real merge: a demo circuit merged on disk into a
release-layout (bf16) base. The predicted merged shape, parameter count and bytes on
disk (per dtype, from the shapes and the circuit's bf16-exact tensors) equal the files
`merge_checkpoint` writes, and the predicted peak of the merge bounds the measured one."""

import json
import tracemalloc

import numpy as np

from qgpu.merge import merge_checkpoint
from qgpu.merge.size import bf16_parameters, merge_size, parameters
from qgpu.model.checkpoint import checkpoint_files, read_config, read_safetensors_header

from .helpers import demo_circuit, random_base, write_release_layout


def _data_bytes(directory) -> dict:
    """Bytes of tensor data on disk by dtype (headers excluded)."""
    out: dict = {}
    for path in checkpoint_files(directory):
        header, _ = read_safetensors_header(path)
        for name, entry in header.items():
            if name != "__metadata__":
                a, b = entry["data_offsets"]
                out[entry["dtype"]] = out.get(entry["dtype"], 0) + b - a
    return out


def test_prediction_equals_a_real_merge(tmp_path):
    _, part = demo_circuit("adder")
    base = random_base("h96_untied", seed=2)
    (tmp_path / "base").mkdir()
    write_release_layout(tmp_path / "base", base)
    tracemalloc.start()
    layout = merge_checkpoint(tmp_path / "base", part, tmp_path / "out", shard_bytes=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    merged = read_config(tmp_path / "out")[0]
    c = part.weights.config
    report = merge_size(base.config, c.hidden_size, c.num_hidden_layers, c.vocab_size,
                        circuit_nonzeros=part.weights.nonzero_count(),
                        circuit_bf16_params=bf16_parameters(part.weights, layout.hidden))
    assert report.merged.hidden_size == merged.hidden_size == layout.hidden
    assert report.merged.num_hidden_layers == merged.num_hidden_layers
    assert report.merged.vocab_size == merged.vocab_size
    assert report.merged_parameters == parameters(merged)
    on_disk = _data_bytes(tmp_path / "out")
    assert report.disk_total == sum(on_disk.values()), (report.disk_bytes, on_disk)
    assert on_disk.get("BF16", 0) > 0   # the base's layers stayed bf16
    assert peak <= report.merge_peak_bytes, (peak, report.merge_peak_bytes)
    info = json.loads((tmp_path / "out" / "qgpu_merge.json").read_text())
    assert info["hidden"] == report.layout.hidden and np.isfinite(peak)
