"""Random bases at the machine's layer shape (the 2B per-layer shape: 16 heads of 128,
MLP 6144), the machine's CircuitPart (compiled once per process, cached on disk), a small
word-level tokenizer with the chat markers, and the scripted language stand-in."""

from __future__ import annotations

import functools

import numpy as np

from qgpu.circuit.schedule import LayerShape
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import EMBED, QwenWeights

SHAPE = LayerShape.qwen35_2b()
# (hidden, layer types, tied): linear-only bases run on the native kernel, bases with a
# full-attention layer on the fast engine's numpy backend
MACHINE_BASES = {
    "m64_tied_linear": (64, [LINEAR, LINEAR], True),
    "m96_untied_full": (96, [LINEAR, FULL, LINEAR], False),
    "m160_tied_full_first": (160, [FULL, LINEAR], True),
}
WORDS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "system",
         "user", "assistant"]


def machine_base_config(hidden: int, types: list[str], tied: bool,
                        vocab: int = 160) -> QwenConfig:
    s = SHAPE
    return QwenConfig(hidden_size=hidden, num_hidden_layers=len(types), layer_types=types,
                      vocab_size=vocab, intermediate_size=s.mlp,
                      linear_num_key_heads=s.key_heads, linear_num_value_heads=s.value_heads,
                      linear_key_head_dim=s.key_dim, linear_value_head_dim=s.value_dim,
                      num_attention_heads=s.attention_heads,
                      num_key_value_heads=s.attention_kv_heads,
                      head_dim=s.attention_head_dim, tie_word_embeddings=tied)


def machine_base(name: str, seed: int = 0) -> QwenWeights:
    hidden, types, tied = MACHINE_BASES[name]
    w = QwenWeights.random(machine_base_config(hidden, types, tied), seed=seed, scale=0.05)
    rng = np.random.default_rng(seed + 1)
    w[EMBED] = rng.normal(0, 1.0, w[EMBED].shape)
    return w


@functools.cache
def machine_part():
    from qgpu.merge.circuits import machine_part as compile_part

    return compile_part(SHAPE)


@functools.lru_cache(maxsize=1)
def merged_machine(base_name: str):
    """(CheckpointMachine over the in-memory merge of machine_base(name, seed=3), layout).
    One kept at a time: each holds a few GiB (tests ask for one base after another)."""
    from qgpu.merge import merge_weights
    from qgpu.runtime.checkpoint import machine_from_weights

    part = machine_part()
    merged, lay = merge_weights(machine_base(base_name, seed=3), part)
    info = {"circuit": part.name, **lay.describe(), "circuit_info": part.info}
    return machine_from_weights(merged, info), lay


def write_tokenizer(directory, size: int = 150) -> None:
    """A word-level tokenizer: words w0, w1, ..., then the chat markers (size ids)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    words = [f"w{i}" for i in range(size - len(WORDS))]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(w, normalized=False, special=True) for w in WORDS])
    tok.save(str(directory / "tokenizer.json"))


class ScriptedLanguage:
    """The language part's stand-in: `generate(prompt) -> text` with canned replies,
    recording the prompts it was given."""

    def __init__(self, replies: list[str]):
        self.replies, self.prompts = list(replies), []

    def generate(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)
