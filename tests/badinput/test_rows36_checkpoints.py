"""Issue 36, a checkpoint whose qgpu_merge.json disagrees with its weights: refused by name
when it is loaded (the GPU token offset against the embedding's rows, the layer count and
width against config.json and the tensors), and a tensor edited in place after the merge
(its modification time restored) is named by the CRC-32 `qgpu merge` stored, never run
from a launch plan built from the old bytes."""

import json
import os
import time

import pytest

from qgpu.cli import main
from qgpu.merge.merge import CHECKSUMS
from qgpu.model.checkpoint import checkpoint_files, read_safetensors_header, save_checkpoint
from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE
from qgpu.runtime.checkpoint import _fingerprint
from qgpu.runtime.checkpoint_check import CheckpointLayoutError, check_checksums, check_layout
from tests.merge.helpers import random_base

from .test_rows import one_error


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows36_merge")
    save_checkpoint(random_base("h96_untied", seed=5), root / "base")
    assert main(["merge", "--base", str(root / "base"), "--out", str(root / "out"),
                 "--circuit", "counter", "--quiet", "--shard-gb", "0.002"]) == 0
    return root / "out"


def _info(directory):
    return json.loads((directory / "qgpu_merge.json").read_text())


def _copy(merged, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(merged, out)
    return out


def test_a_consistent_merge_passes_and_stores_checksums(merged):
    info = _info(merged)
    sums = info[CHECKSUMS]
    lc = info["circuit_layers"]
    assert f"model.embed_tokens.weight[{info['gpu_token_offset']}:{info['pad_token']}]" in sums
    assert any(k.startswith(f"model.layers.{lc - 1}.") for k in sums)
    assert not any(k.startswith(f"model.layers.{lc}.") for k in sums)   # base layers: no
    assert len(checkpoint_files(merged)) > 1       # sharded: sums span several files
    check_layout(merged, info)
    start = time.perf_counter()
    check_checksums(merged, info)
    print(f"check_checksums: {time.perf_counter() - start:.3f} s")


@pytest.mark.parametrize("edit, said", [
    ({"gpu_token_offset": +1}, "gpu_token_offset 151 is not where the GPU tokens start"),
    ({"gpu_token_offset": -1}, "gpu_token_offset 149 is not where the GPU tokens start"),
    ({"gpu_token_offset": +40}, "pass the model's vocabulary"),
    ({"circuit_layers": +1}, "circuit +"),
    ({"hidden": -8}, "hidden"),
    ({"vocab_size": +1}, "vocab_size"),
    ({"circuit_hidden": +200}, "circuit's 233 dims do not fit the 96 shared dims"),
])
def test_a_layout_file_that_disagrees_is_refused_by_name(merged, edit, said):
    info = _info(merged)
    for key, delta in edit.items():
        info[key] += delta
    with pytest.raises(CheckpointLayoutError, match="does not match the weights") as err:
        check_layout(merged, info)
    assert said in str(err.value)


def test_qgpu_run_names_an_edited_offset_before_any_launch(merged, tmp_path, capsys):
    """Through `qgpu run --model`: the merge's layout file relabelled as a machine's (so
    the runtime takes it) with its GPU token offset edited: one line naming the layout."""
    out = _copy(merged, tmp_path)
    info = _info(out)
    info.update(circuit="machine", gpu_tokens=VOCAB_SIZE, gpu_token_offset=151,
                circuit_info={"spec": {"slots": 1, "stages": 1, "warps": 1, "ops": ["add"]},
                              "memory": {"layer": 0, "head": 0, "rows": 128, "columns": 4},
                              "protocol": PROTOCOL_VERSION})
    info["vocab_size"] = info["gpu_token_offset"] + VOCAB_SIZE + 1
    (out / "qgpu_merge.json").write_text(json.dumps(info))
    kernel = tmp_path / "k.cu"
    kernel.write_text("__global__ void k(int *o) { o[threadIdx.x] = 1; }\n")
    start = time.perf_counter()
    err = one_error(capsys, "run", ["run", str(kernel), "--grid", "1", "--block", "4",
                                    "--arg", "o=zeros:4", "--model", str(out)])
    assert "qgpu_merge.json does not match the weights" in err
    assert time.perf_counter() - start < 20


def test_a_tensor_edited_in_place_is_named(merged, tmp_path):
    out = _copy(merged, tmp_path)
    info = _info(out)
    name = next(k for k in info[CHECKSUMS] if k.startswith("model.layers.0."))
    tensor = name.partition("[")[0]
    before = _fingerprint(out)
    for path in checkpoint_files(out):
        header, data_start = read_safetensors_header(path)
        if tensor in header:
            st = path.stat()
            with open(path, "r+b") as f:
                f.seek(data_start + header[tensor]["data_offsets"][0] + 4)
                old = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([old[0] ^ 0x40]))
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))   # the mtime restored
            assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size
    assert _fingerprint(out) != before     # a stored launch plan is not reused
    with pytest.raises(CheckpointLayoutError, match=r"is not what qgpu merge wrote") as err:
        check_checksums(out, info)
    assert tensor in str(err.value)
