"""merge_checkpoint: directory to directory, streamed. The written checkpoint equals the
in-memory merge bit for bit (our layout, sharded output; a release layout in bf16 with
vision and mtp weights beside the text model), memory stays at a few blocks, the
tokenizer decodes and encodes GPU tokens, and the CLI writes the same."""

import json
import tracemalloc

import numpy as np
import pytest

from qgpu.cli import main as cli_main
from qgpu.merge import MergeError, merge_checkpoint, merge_weights
from qgpu.merge.tokenizer import gpu_token_text
from qgpu.merge.writer import is_bf16, to_bf16
from qgpu.model.checkpoint import (
    WEIGHTS_FILE,
    load_checkpoint,
    read_safetensors_header,
    save_checkpoint,
)
from qgpu.model.weights import EMBED

from .helpers import demo_circuit, random_base, write_release_layout


def assert_same_weights(a, b):
    assert a.config == b.config
    assert set(a.tensors) == set(b.tensors)
    for name, value in a.tensors.items():
        np.testing.assert_array_equal(b[name], value, err_msg=name)


def test_directory_merge_equals_in_memory_merge_across_shards(tmp_path):
    _, part = demo_circuit("adder")
    base = random_base("h96_untied", seed=1)
    save_checkpoint(base, tmp_path / "base")
    layout = merge_checkpoint(tmp_path / "base", part, tmp_path / "out", shard_bytes=1 << 20)
    assert len(list((tmp_path / "out").glob("model-*.safetensors"))) > 2
    assert (tmp_path / "out" / "model.safetensors.index.json").is_file()
    want, _ = merge_weights(base, part)
    assert_same_weights(want, load_checkpoint(tmp_path / "out"))
    info = json.loads((tmp_path / "out" / "qgpu_merge.json").read_text())
    assert info["gpu_token_offset"] == 150 and info["circuit"] == "adder"
    assert info["circuit_layers"] == layout.circuit_layers and not info["tokenizer"]


def test_release_layout_base_in_bf16(tmp_path):
    _, part = demo_circuit("counter")
    base = random_base("h160_tied_two_full", seed=2)
    (tmp_path / "base").mkdir()
    write_release_layout(tmp_path / "base", base)
    merge_checkpoint(tmp_path / "base", part, tmp_path / "out")
    want, _ = merge_weights(load_checkpoint(tmp_path / "base"), part)  # bf16-rounded base
    assert_same_weights(want, load_checkpoint(tmp_path / "out"))
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["model_type"] == "qwen3_5_text" and config["eos_token_id"] == 3
    assert not config["tie_word_embeddings"]
    header, _ = read_safetensors_header(tmp_path / "out" / WEIGHTS_FILE)
    dtypes = {name: entry["dtype"] for name, entry in header.items() if name != "__metadata__"}
    circuit = part.config.num_hidden_layers
    # the bf16 base's layer weights stay bf16 (scale and gains are powers of two) ...
    assert dtypes[f"model.layers.{circuit}.mlp.gate_proj.weight"] == "BF16"
    assert dtypes[f"model.layers.{circuit + 1}.linear_attn.in_proj_qkv.weight"] == "BF16"
    # ... norms (compensated), embedding (text flag) and head (rescaled rows) are float32
    for name in ("model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
                 f"model.layers.{circuit}.input_layernorm.weight"):
        assert dtypes[name] == "F32", name
    assert "BF16" in {dtypes[n] for n in dtypes if n.startswith("model.layers.0.")}


def test_bf16_storage_refuses_a_value_that_would_round():
    assert is_bf16(np.array([1.0, -2.0 ** 64, 3.0, 0.0], np.float32))
    assert not is_bf16(np.array([1.0, 1.0 + 2.0 ** -10], np.float32))
    with pytest.raises(ValueError, match="not a bfloat16 number"):
        to_bf16(np.array([[0.1]], np.float32), "x")
    np.testing.assert_array_equal(to_bf16(np.array([[-3.0]], np.float32), "x"), [[0xC040]])


def test_memory_stays_at_a_few_blocks(tmp_path):
    """A base whose embedding alone is 4 MiB, merged with 64 KiB blocks: the merge's peak
    Python allocation stays far below one copy of the merged embedding."""
    _, part = demo_circuit("register_echo")
    base = random_base("h64_tied", seed=3)
    big = base.config
    big.vocab_size = 16_000
    base = type(base).random(big, seed=3)
    save_checkpoint(base, tmp_path / "base")
    merged_embedding = (big.vocab_size + part.vocab_size) * (64 + 4) * 4
    tracemalloc.start()
    merge_checkpoint(tmp_path / "base", part, tmp_path / "out", block_bytes=64 << 10)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < merged_embedding / 4, (peak, merged_embedding)
    np.testing.assert_array_equal(load_checkpoint(tmp_path / "out")[EMBED][:big.vocab_size, :64],
                                  base[EMBED] * 2)


def _small_tokenizer(directory, size: int):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {chr(ord("a") + i % 26) * (1 + i // 26): i for i in range(size - 1)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="a"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["<|endoftext|>"])
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
        "added_tokens_decoder": {str(size - 1): {"content": "<|endoftext|>", "special": True,
                                                 "lstrip": False, "rstrip": False,
                                                 "normalized": False, "single_word": False}}}))


def test_tokenizer_gets_the_gpu_tokens(tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    demo, part = demo_circuit("register_echo")
    save_checkpoint(random_base("h64_tied", seed=4), tmp_path / "base")
    _small_tokenizer(tmp_path / "base", 120)  # the model's vocabulary is padded to 150
    layout = merge_checkpoint(tmp_path / "base", part, tmp_path / "out")
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert len(tok) == layout.vocab_size
    set_id = layout.gpu_token(demo.vocab.id("SET", 2, 5))
    name = gpu_token_text("register_echo.SET(2, 5)")
    assert tok.convert_ids_to_tokens(set_id) == name
    assert tok.decode([0, set_id, 1]).replace(" ", "") == "a" + name + "b"
    assert tok.encode("a " + name + " b") == [0, set_id, 1]
    assert tok.decode([130], skip_special_tokens=True) == ""  # a reserved filler
    assert tok.decode([0, 1]) == AutoTokenizer.from_pretrained(tmp_path / "base").decode([0, 1])


def test_refuses_to_overwrite(tmp_path):
    _, part = demo_circuit("register_echo")
    save_checkpoint(random_base("h64_tied"), tmp_path / "base")
    with pytest.raises(MergeError, match="differ"):
        merge_checkpoint(tmp_path / "base", part, tmp_path / "base")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("")
    with pytest.raises(MergeError, match="not empty"):
        merge_checkpoint(tmp_path / "base", part, tmp_path / "out")


def test_cli_merge(tmp_path, capsys):
    save_checkpoint(random_base("h96_untied", seed=5), tmp_path / "base")
    argv = ["merge", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "out"),
            "--circuit", "counter", "--quiet"]
    assert cli_main(argv) == 0
    assert "GPU tokens 150..198, pad 199" in capsys.readouterr().out
    _, part = demo_circuit("counter")
    want, _ = merge_weights(load_checkpoint(tmp_path / "base"), part)
    assert_same_weights(want, load_checkpoint(tmp_path / "out"))
    assert cli_main(argv) == 1
    assert "not empty" in capsys.readouterr().err
