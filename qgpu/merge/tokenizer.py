"""merge.tokenizer: the base's tokenizer files with the GPU tokens added.

GPU token t has id Vb + t (Vb: the base model's vocab_size, which real releases pad past
the tokenizer's last id). Each is an added token named after the circuit's vocabulary,
`<|gpu:NAME|>` (not special: a decoded launch stays visible; normalized=False: the name
matches literally when encoding), so a GPU token's text encodes to its one id.

The `tokenizers` library numbers the added tokens it does not find in the model's vocab
consecutively from the vocab's size, so the ids between the tokenizer's size and Vb
(96,651 on a Qwen3.5 release: 151,669 ids, Vb 248,320) are filled with
`<|qgpu:reserved_N|>`. Where they go decides how fast the merged tokenizer loads: every
added token costs `tokenizers` a pattern in its matcher and transformers Python objects
(AddedToken, copied several times on load), so 173K added tokens (fillers and GPU
tokens) loaded in ~10x the base's time. So for a BPE tokenizer (Qwen's) the fillers go
into the BPE model's vocab, with the base's own added tokens at their ids (they stay in
the added list too, flags and all), making the vocab contiguous up to Vb; only the GPU
tokens are added. Text tokenization is unchanged: BPE only ever emits the single
characters it starts from and the results of its merges, and a filler (many characters,
no merge makes it) is neither. (Fillers are then plain vocab entries: a filler id
decodes to its name even with skip_special_tokens; the base's own tokenizer has no token
at those ids at all.) Other tokenizer models (WordLevel's vocab would match a filler
typed as a word) keep the fillers as added special tokens.

transformers reads added tokens either from tokenizer.json (its generic
`PreTrainedTokenizerFast`, which loads the file as `tokenizers` does) or, for model
classes that rebuild the tokenizer from vocab and merges (Qwen2Tokenizer), from
tokenizer_config.json's `added_tokens_decoder` one Python object each. So
tokenizer_config.json names `PreTrainedTokenizerFast` and keeps the base's
`added_tokens_decoder` as it was: the GPU tokens live in tokenizer.json only.
benchmarks/bench_merged_tokenizer.py measures both loaders on a Qwen tokenizer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from qgpu.merge.layout import MergeError

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# the transformers class that loads tokenizer.json as it is, added tokens included
TOKENIZER_CLASS = "PreTrainedTokenizerFast"


GPU_TOKEN_PREFIX = "<|gpu:"


def gpu_token_text(name: str) -> str:
    return GPU_TOKEN_PREFIX + re.sub(r"\s+", "", name) + "|>"


def filler_text(token_id: int) -> str:
    return f"<|qgpu:reserved_{token_id}|>"


def _entry(token_id: int, content: str, special: bool) -> dict:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def tokenizer_size(body: dict) -> int:
    ids = list(body.get("model", {}).get("vocab", {}).values())
    ids += [t["id"] for t in body.get("added_tokens", [])]
    return max(ids, default=-1) + 1


def added_entries(body: dict, base_vocab: int, names: list[str]) -> list[dict]:
    """The added-token entries for tokenizer.json: reserved fillers (special), then the GPU
    tokens."""
    size = tokenizer_size(body)
    if size > base_vocab:
        raise MergeError(f"the tokenizer has {size} ids, more than the model's vocabulary "
                         f"{base_vocab}: the GPU tokens would collide with text tokens")
    texts = [gpu_token_text(n) for n in names]
    if len(set(texts)) != len(texts):
        raise MergeError("two GPU tokens have the same name")
    vocab = body.get("model", {}).get("vocab", {})
    existing = set(vocab) if isinstance(vocab, dict) else {v[0] for v in vocab}
    existing |= {t["content"] for t in body.get("added_tokens", [])}
    clash = [t for t in texts if t in existing]
    if clash:
        raise MergeError(f"GPU token names already in the tokenizer: {clash[:3]}")
    entries = [_entry(i, filler_text(i), True) for i in range(size, base_vocab)]
    entries += [_entry(base_vocab + i, text, False) for i, text in enumerate(texts)]
    return entries


def _vocab_with_fillers(body: dict, added: list[dict], fillers: list[dict],
                        base_vocab: int) -> dict | None:
    """The BPE model's vocab with the base's added tokens and the fillers at their ids,
    or None where that cannot be: not a BPE model with a {token: id} vocab, an added
    token whose text the vocab holds at another id, or ids left with gaps below
    base_vocab (`tokenizers` would number the GPU tokens from the vocab's length)."""
    model = body.get("model", {})
    if model.get("type") != "BPE" or not isinstance(model.get("vocab"), dict):
        return None
    vocab = dict(model["vocab"])
    for e in added + fillers:
        if vocab.setdefault(e["content"], e["id"]) != e["id"]:
            return None
    if len(set(vocab.values())) != len(vocab) or len(vocab) != base_vocab \
            or min(vocab.values()) != 0 or max(vocab.values()) != base_vocab - 1:
        return None
    return vocab


def merged_tokenizer(body: dict, base_vocab: int, names: list[str]) -> dict:
    """tokenizer.json's body with the GPU tokens at ids base_vocab + t (a new dict; the
    module docstring says where the fillers go)."""
    entries = added_entries(body, base_vocab, names)
    body = dict(body)
    added = list(body.get("added_tokens", []))
    fillers = [e for e in entries if e["special"]]
    gpu = [e for e in entries if not e["special"]]
    vocab = _vocab_with_fillers(body, added, fillers, base_vocab)
    if vocab is not None:
        body["model"] = {**body["model"], "vocab": vocab}
    else:
        added += fillers
    body["added_tokens"] = added + gpu
    return body


def add_gpu_tokens(src: Path, out: Path, base_vocab: int, names: list[str]) -> bool:
    """Write out/tokenizer.json (and tokenizer_config.json) with the GPU tokens added.
    Returns False when `src` has no tokenizer.json."""
    if not (src / TOKENIZER_FILE).is_file():
        return False
    body = merged_tokenizer(json.loads((src / TOKENIZER_FILE).read_text()), base_vocab,
                            names)
    (out / TOKENIZER_FILE).write_text(json.dumps(body, ensure_ascii=False) + "\n")
    if (src / TOKENIZER_CONFIG).is_file():
        config = json.loads((src / TOKENIZER_CONFIG).read_text())
        config["tokenizer_class"] = TOKENIZER_CLASS
        (out / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False)
                                            + "\n")
    return True
