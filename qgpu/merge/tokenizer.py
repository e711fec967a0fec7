"""merge.tokenizer: the base's tokenizer files with the GPU tokens added.

GPU token t has id Vb + t (Vb: the base model's vocab_size, which real releases pad past
the tokenizer's last id). The `tokenizers` library numbers added tokens consecutively, so
ids between the tokenizer's size and Vb are filled with reserved special tokens
(`<|qgpu:reserved_N|>`, skipped by skip_special_tokens), then one added token per GPU
token named after the circuit's vocabulary: `<|gpu:NAME|>` (not special: a decoded launch
stays visible; normalized=False: the name matches literally when encoding).
`tokenizer.json` gets the added tokens; `tokenizer_config.json`'s `added_tokens_decoder`
(when present) gets the same entries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from qgpu.merge.layout import MergeError

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


def gpu_token_text(name: str) -> str:
    return "<|gpu:" + re.sub(r"\s+", "", name) + "|>"


def _entry(token_id: int, content: str, special: bool) -> dict:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def tokenizer_size(body: dict) -> int:
    ids = list(body.get("model", {}).get("vocab", {}).values())
    ids += [t["id"] for t in body.get("added_tokens", [])]
    return max(ids, default=-1) + 1


def added_entries(body: dict, base_vocab: int, names: list[str]) -> list[dict]:
    """The added-token entries for tokenizer.json: reserved fillers, then the GPU tokens."""
    size = tokenizer_size(body)
    if size > base_vocab:
        raise MergeError(f"the tokenizer has {size} ids, more than the model's vocabulary "
                         f"{base_vocab}: the GPU tokens would collide with text tokens")
    texts = [gpu_token_text(n) for n in names]
    if len(set(texts)) != len(texts):
        raise MergeError("two GPU tokens have the same name")
    existing = set(body.get("model", {}).get("vocab", {})) | {
        t["content"] for t in body.get("added_tokens", [])}
    clash = [t for t in texts if t in existing]
    if clash:
        raise MergeError(f"GPU token names already in the tokenizer: {clash[:3]}")
    entries = [_entry(i, f"<|qgpu:reserved_{i}|>", True) for i in range(size, base_vocab)]
    entries += [_entry(base_vocab + i, text, False) for i, text in enumerate(texts)]
    return entries


def add_gpu_tokens(src: Path, out: Path, base_vocab: int, names: list[str]) -> bool:
    """Write out/tokenizer.json (and tokenizer_config.json) with the GPU tokens added.
    Returns False when `src` has no tokenizer.json."""
    if not (src / TOKENIZER_FILE).is_file():
        return False
    body = json.loads((src / TOKENIZER_FILE).read_text())
    entries = added_entries(body, base_vocab, names)
    body.setdefault("added_tokens", []).extend(entries)
    (out / TOKENIZER_FILE).write_text(json.dumps(body, ensure_ascii=False) + "\n")
    if (src / TOKENIZER_CONFIG).is_file():
        config = json.loads((src / TOKENIZER_CONFIG).read_text())
        if "added_tokens_decoder" in config:
            for e in entries:
                config["added_tokens_decoder"][str(e["id"])] = {
                    k: v for k, v in e.items() if k != "id"}
        (out / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False)
                                            + "\n")
    return True
