"""Broken and hostile checkpoints: every one is a CheckpointError (or the machine's
CheckpointMachineError) naming the file, never a read past the end of a file, a numpy
error or a traceback from the CLI."""

import json
import struct

import numpy as np
import pytest

from qgpu.cli import main
from qgpu.model.checkpoint import (
    CheckpointError,
    load_checkpoint,
    read_safetensors_header,
    save_checkpoint,
)
from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights, expected_shapes
from qgpu.runtime.checkpoint import CheckpointMachineError, read_info

KERNEL = "__global__ void k(int *o) { o[threadIdx.x] = 1; }\n"


def tiny_weights() -> QwenWeights:
    config = QwenConfig(hidden_size=32, num_hidden_layers=1, layer_types=["linear_attention"],
                        vocab_size=16, intermediate_size=16, linear_num_key_heads=1,
                        linear_num_value_heads=1, linear_key_head_dim=8,
                        linear_value_head_dim=8, num_attention_heads=2,
                        num_key_value_heads=1, head_dim=16)
    rng = np.random.default_rng(0)
    return QwenWeights(config, {n: rng.standard_normal(s).astype(np.float32)
                                for n, s in expected_shapes(config).items()})


def _file(path, header, data: bytes, length=None):
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head) if length is None else length) + head + data)
    return path


GOOD = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}


@pytest.mark.parametrize("header, data, length, match", [
    (GOOD, bytes(16), 1 << 62, "header length"),                       # huge length
    (GOOD, bytes(16), 10 ** 6, "header length"),                       # past the end
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 1 << 40]}}, bytes(16),
     None, "offsets"),                                                 # past the end
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [8, 4]}}, bytes(16),
     None, "offsets"),                                                 # reversed
    ({"w": {"dtype": "F32", "shape": [3, 3], "data_offsets": [0, 16]}}, bytes(16),
     None, "needs 36 bytes"),                                          # shape vs bytes
    ({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}}, bytes(16),
     None, "bad shape"),
    ({"w": {"dtype": "F32", "shape": "2x2", "data_offsets": [0, 16]}}, bytes(16),
     None, "bad shape"),
    ({"w": {"shape": [2, 2], "data_offsets": [0, 16]}}, bytes(16), None, "no dtype"),
    ({"w": [1, 2]}, bytes(16), None, "not an object"),
    ([1, 2, 3], b"", None, "not a JSON object"),
])
def test_hostile_safetensors_headers(tmp_path, header, data, length, match):
    path = _file(tmp_path / "model.safetensors", header, data, length)
    with pytest.raises(CheckpointError, match=match):
        read_safetensors_header(path)


def test_unreadable_and_short_headers(tmp_path):
    (tmp_path / "a").write_bytes(b"\x01\x02")
    with pytest.raises(CheckpointError, match="too short"):
        read_safetensors_header(tmp_path / "a")
    (tmp_path / "b").write_bytes(struct.pack("<Q", 4) + b"{{{{")
    with pytest.raises(CheckpointError, match="unreadable"):
        read_safetensors_header(tmp_path / "b")


def test_a_good_checkpoint_still_loads_and_a_truncated_one_is_refused(tmp_path):
    weights = tiny_weights()
    save_checkpoint(weights, tmp_path)
    loaded = load_checkpoint(tmp_path)
    for name, value in weights.tensors.items():
        assert np.array_equal(np.asarray(loaded[name]), value)
    blob = (tmp_path / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(blob[:-100])
    with pytest.raises(CheckpointError, match="outside the file"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("body, match", [
    ("{", "not valid JSON"), ("[1, 2]", "JSON list"), ('"x"', "JSON str"),
    ('{"text_config": 5}', "not a Qwen3.5 config"),
    ('{"hidden_size": "big"}', "shape"),
    ('{"num_hidden_layers": -1}', "config.json"),
])
def test_broken_config_json(tmp_path, body, match):
    save_checkpoint(tiny_weights(), tmp_path)
    (tmp_path / "config.json").write_text(body)
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(tmp_path)


def test_broken_index(tmp_path):
    save_checkpoint(tiny_weights(), tmp_path)
    for body in ("[", '{"weight_map": 3}', '{"weight_map": {"a": "../../etc/passwd"}}'):
        (tmp_path / "model.safetensors.index.json").write_text(body)
        with pytest.raises(CheckpointError):
            load_checkpoint(tmp_path)


@pytest.mark.parametrize("body, match", [
    ("{garbage", "not valid JSON"), ("7", "JSON int"),
    ('{"circuit": "machine", "gpu_token_offset": "x"}', "gpu_token_offset"),
    ('{"circuit": "machine", "gpu_token_offset": 0, "gpu_tokens": 9, "circuit_info": {}}',
     "spec"),
    ('{"circuit": "machine", "gpu_token_offset": 0, "gpu_tokens": 9, "circuit_info": '
     '{"spec": {"slots": 1, "stages": 4, "warps": 4, "ops": "add"}, "memory": {}}}', "ops"),
])
def test_garbled_layout_file(tmp_path, body, match):
    (tmp_path / "qgpu_merge.json").write_text(body)
    with pytest.raises(CheckpointMachineError, match=match):
        read_info(tmp_path)


@pytest.mark.parametrize("which, body", [("qgpu_merge.json", "{"), ("config.json", "[]"),
                                         ("qgpu_merge.json", '{"circuit": "machine"}')])
def test_cli_run_and_merge_on_garbage_directories(tmp_path, capsys, which, body):
    save_checkpoint(tiny_weights(), tmp_path / "m")
    (tmp_path / "m" / which).write_text(body)
    (tmp_path / "k.cu").write_text(KERNEL)
    assert main(["run", str(tmp_path / "k.cu"), "--grid", "1", "--block", "4", "--arg",
                 "o=zeros:4", "--model", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("qgpu run: error: ") and len(err.strip().splitlines()) == 1
    if which == "config.json":
        assert main(["merge", "--base", str(tmp_path / "m"), "--out", str(tmp_path / "o"),
                     "--quiet"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("qgpu merge: error: ") and "config.json" in err
