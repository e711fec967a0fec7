"""Text speed of `qgpu chat`'s engine (model.text_engine.TextEngine through
chat.text.TextModel) on a checkpoint directory: prompt tokens/s, time to the first token,
generation tokens/s, peak RSS, and the prompt cache's effect (a retry of the same prompt,
a second question on the same system prompt); llama.cpp on a GGUF of the same base side
by side when --gguf is given and llama_cpp imports.

    .venv/bin/python benchmarks/bench_text_speed.py --model DIR [--gguf BASE.gguf]
        [--prompt-tokens 40] [--new-tokens 32] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

GIB = 2 ** 30


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def prompt_ids(vocab: int, count: int, start: int | None, seed: int) -> list[int]:
    """A ChatML-shaped prompt of `count` ids: a system message, then a user message."""
    import numpy as np

    rng = np.random.default_rng(seed)
    body = [int(t) for t in rng.integers(100, min(vocab, 20000), count)]
    if start is None:
        return body
    split = count * 3 // 4
    return [start] + body[:split] + [start] + body[split:]


def measure_qgpu(model: str, count: int, new: int, weights: str = "bf16") -> dict:
    from qgpu.chat.text import TextModel
    from qgpu.model.text_engine import TextEngine

    t0 = time.perf_counter()
    engine = TextEngine.from_directory(model, weights)
    text = TextModel.from_directory(model, engine, engine.config.vocab_size, new)
    text.stop_ids = set()   # a fixed number of tokens
    load = time.perf_counter() - t0
    ids = prompt_ids(engine.config.vocab_size, count, text.message_start, 1)
    text.cache.entries.clear()
    out = text.generate_ids(ids)
    first = dict(text.stats)
    retry_ids = text.generate_ids(ids)
    retry = dict(text.stats)
    other = ids[:ids.index(text.message_start, 1)] + prompt_ids(
        engine.config.vocab_size, count // 4, text.message_start, 2)[-(count // 4) - 1:]
    text.generate_ids(other)
    second = dict(text.stats)
    return {"load_s": load, "prompt_tokens": len(ids),
            "prompt_tok_s": (len(ids) - 1) / first["first_token_s"],
            "first_token_s": first["first_token_s"], "gen_tok_s": first["tokens_per_s"],
            "retry_first_token_s": retry["first_token_s"], "retry_same": retry_ids == out,
            "retry_cached": retry["cached_tokens"],
            "second_question_first_token_s": second["first_token_s"],
            "second_question_cached": second["cached_tokens"], "peak_rss_gib": peak_rss_gib()}


def measure_llama(gguf: str, count: int, new: int, threads: int) -> dict:
    import llama_cpp

    llm = llama_cpp.Llama(gguf, n_ctx=max(512, 2 * (count + new)), n_threads=threads,
                          n_threads_batch=threads, verbose=False)
    ids = prompt_ids(llm.n_vocab(), count, None, 1)
    t0 = time.perf_counter()
    llm.eval(ids)
    prompt = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(new):
        token = llm.sample(top_k=1)
        llm.eval([token])
    gen = time.perf_counter() - t1
    return {"prompt_tok_s": count / prompt, "gen_tok_s": new / gen,
            "peak_rss_gib": peak_rss_gib()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gguf")
    ap.add_argument("--prompt-tokens", type=int, default=40)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--text-weights", choices=("bf16", "q8"), default="bf16",
                    help="one engine per process, so that its peak RSS is its own")
    a = ap.parse_args()
    os.environ["QGPU_THREADS"] = str(a.threads)
    rows = {f"qgpu chat ({a.text_weights})": measure_qgpu(a.model, a.prompt_tokens,
                                                          a.new_tokens, a.text_weights)}
    if a.gguf:
        try:
            rows["llama.cpp " + os.path.basename(a.gguf)] = measure_llama(
                a.gguf, a.prompt_tokens, a.new_tokens, a.threads)
        except ImportError as exc:
            print(f"llama.cpp skipped: {exc}")
    for name, row in rows.items():
        print(name)
        for key, value in row.items():
            print(f"  {key:32} {value:.3f}" if isinstance(value, float)
                  else f"  {key:32} {value}")


if __name__ == "__main__":
    main()
