"""model.gguf: a compiled circuit written as GGUF (qwen35, float32) and read back with the
gguf package's reader: the tensors llama.cpp expects, converted as convert_hf_to_gguf
converts Qwen3_5ForCausalLM, the vocabulary and qgpu's layout info."""

import json

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS
from qgpu.model.gguf import INFO_KEY, GgufError, gguf_name, token_table, weights_to_gguf
from qgpu.model.gguf_types import F16_PROJECTIONS
from qgpu.model.weights import expected_shapes

gguf = pytest.importorskip("gguf")


def _demo_gguf(tmp_path, name="adder"):
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    w = compiled.weights
    info = {"circuit": name, "gpu_token_offset": 0, "gpu_tokens": w.config.vocab_size}
    names = [demo.vocab.name(i) for i in range(demo.vocab.size)]
    path = tmp_path / f"{name}.gguf"
    weights_to_gguf(w, info, path, names=names)
    return demo, w, info, names, gguf.GGUFReader(path)


def _field(reader, key):
    return reader.get_field(key).contents()


def test_demo_circuit_as_gguf_tensors_metadata_vocabulary(tmp_path):
    demo, w, info, names, reader = _demo_gguf(tmp_path)
    c = w.config
    tensors = {t.name: t for t in reader.tensors}
    shapes = expected_shapes(c)
    assert len(tensors) == len(shapes)
    for hf in shapes:
        t = tensors[gguf_name(hf, c.num_hidden_layers)]
        # the policy "exact" (model.gguf_types): projections from the residual 16-bit where
        # exact, zeros F16, the rest F32
        dense = w.dense(hf).astype(np.float32)
        if hf.endswith(F16_PROJECTIONS):
            with np.errstate(over="ignore"):
                half = np.array_equal(dense.astype(np.float16).astype(np.float32), dense)
            brain = not np.any(dense.view(np.uint32) & 0xFFFF)
            want_type = "F16" if half else "BF16" if brain else "F32"
        elif dense.ndim > 1 and "conv1d" not in hf and not np.any(dense):
            want_type = "F16"
        elif dense.ndim > 1 and "layers" not in hf and not np.any(dense.view(np.uint32)
                                                                  & 0xFFFF):
            want_type = "BF16"   # embeddings and head, exact in bfloat16
        else:
            want_type = "F32"
        assert t.tensor_type.name == want_type, hf
        data = np.asarray(t.data)
        if want_type == "BF16":
            data = (np.ascontiguousarray(data).view(np.uint16).astype(np.uint32) << 16).view(
                np.float32)
        data = data.astype(np.float32).reshape(-1)
        want = w.dense(hf).astype(np.float32).reshape(-1)
        if hf.endswith("A_log"):
            want = -np.exp(want)
        elif hf.endswith("norm.weight") and "linear_attn" not in hf:
            want = want + np.float32(1)
        assert np.array_equal(data, want), hf   # bit for bit (conv1d only reshaped)
    assert _field(reader, "general.architecture") == "qwen35"
    assert _field(reader, "qwen35.block_count") == c.num_hidden_layers
    assert _field(reader, "qwen35.embedding_length") == c.hidden_size
    assert _field(reader, "qwen35.ssm.state_size") == c.linear_key_head_dim
    assert _field(reader, "qwen35.attention.recurrent_layers") == [
        t == "linear_attention" for t in c.layer_types]
    assert _field(reader, "tokenizer.ggml.tokens") == names
    assert json.loads(_field(reader, INFO_KEY)) == info
    # A_log = -110 (decay exactly 1) becomes ssm_a = -0.0, so g = -0 and exp(g) = 1
    a = np.asarray(tensors["blk.0.ssm_a"].data)
    assert np.all(a[w.layer(0, "linear_attn.A_log") <= -104] == 0)


def test_token_table_refuses_a_vocabulary_that_does_not_add_up():
    demo = DEMOS["adder"]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    info = {"gpu_token_offset": 5, "gpu_tokens": 3}
    with pytest.raises(GgufError, match="vocabulary"):
        token_table(compiled.weights.config, info, names=["a", "b", "c"])


def test_export_gguf_command_from_a_checkpoint_directory(tmp_path, capsys):
    """`qgpu export-gguf --model DIR` reads config.json, model.safetensors and
    qgpu_merge.json and writes the same file weights_to_gguf writes from memory."""
    from qgpu.cli import main
    from qgpu.model.checkpoint import save_checkpoint
    from qgpu.runtime.checkpoint import LAYOUT_FILE

    demo = DEMOS["counter"]()
    w = compile_circuit(demo.circuit, LayerShape.small(), cache=False).weights
    info = {"circuit": "counter", "gpu_token_offset": 0, "gpu_tokens": w.config.vocab_size}
    save_checkpoint(w, tmp_path / "ckpt")
    (tmp_path / "ckpt" / LAYOUT_FILE).write_text(json.dumps(info))
    out = tmp_path / "counter.gguf"
    assert main(["export-gguf", "--model", str(tmp_path / "ckpt"), "--out", str(out),
                 "--quiet"]) == 0
    assert "counter.gguf" in capsys.readouterr().out
    weights_to_gguf(w, info, tmp_path / "direct.gguf")
    assert out.read_bytes() == (tmp_path / "direct.gguf").read_bytes()
    assert main(["export-gguf", "--model", str(tmp_path / "ckpt"), "--out", str(out)]) == 1
    assert "exists" in capsys.readouterr().err


def test_a_merges_text_side_chats_in_llama_cpps_programs(tmp_path):
    """A merge's tokenizer_config.json gives the file its chat template and its end-of-turn
    token (llama-server and llama-cli stop there), and the GPU tokens take the tokenizer's
    own `<|gpu:NAME|>` strings so that none repeats a text token's."""
    demo = DEMOS["adder"]()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    names = [demo.vocab.name(i) for i in range(demo.vocab.size)]
    offset = 3
    body = {"model": {"vocab": {"a": 0, names[0]: 1}, "merges": []},
            "added_tokens": [{"id": 2, "content": "<|im_end|>", "special": True}]
            + [{"id": offset + i, "content": f"<|gpu:{n}|>", "special": False}
               for i, n in enumerate(names)]}
    (tmp_path / "tokenizer.json").write_text(json.dumps(body))
    template = "{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}"
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": template, "eos_token": "<|im_end|>"}))
    config = compiled.weights.config
    config = type(config).from_hf_dict({**config.to_hf_dict(),
                                        "vocab_size": offset + len(names)})
    info = {"gpu_token_offset": offset, "gpu_tokens": len(names)}
    table = token_table(config, info, names, tokenizer=tmp_path / "tokenizer.json")
    assert table.chat_template == template and table.eos == 2
    assert table.tokens[1] == names[0] and table.tokens[offset] == f"<|gpu:{names[0]}|>"
    body["added_tokens"][1]["content"] = names[0]     # a GPU token spelled as text token 1
    (tmp_path / "tokenizer.json").write_text(json.dumps(body))
    with pytest.raises(GgufError, match="both"):
        token_table(config, info, names, tokenizer=tmp_path / "tokenizer.json")
