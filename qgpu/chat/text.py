"""chat.text: the language part of a merged checkpoint: greedy generation with the base's
tokenizer on the merged model (fast engine). Text tokens pass the circuit layers untouched
(docs/merge.md), so this is the base's own greedy text. Its argmax runs over the base
tokenizer's own ids only: GPU tokens and the `<|qgpu:reserved_N|>` fillers between the
tokenizer's size and the model's vocabulary (padded rows a base may still score highest,
e.g. after a line of control characters) are never written in a reply.

`check_line` refuses, before any token is computed, a line that holds a GPU token's or a
filler's name (typed `<|gpu:GO|>` would feed the machine's token to the text half) or
that is longer than MAX_LINE_TOKENS (a pasted 100 KB line took minutes of prefill with
nothing shown)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from qgpu.chat.prompt_cache import PromptCache
from qgpu.errors import QgpuError

END_TOKENS = ("<|im_end|>", "<|endoftext|>")
MAX_LINE_TOKENS = 2048   # one chat line; the text engine's prefill takes seconds per 1,000
MAX_LINE_CHARS = 64 * 1024   # refused before it is tokenized at all
NOT_TEXT_PREFIXES = ("<|gpu:", "<|qgpu:reserved_")   # merge.tokenizer's names
MESSAGE_START = "<|im_start|>"   # a state is cached before each message of a prompt


class TextModelError(QgpuError):
    """A checkpoint without what the text path needs (tokenizer, text vocabulary)."""


class TextModel:
    """`generate(prompt) -> text` on an engine over a merged (or base) checkpoint."""

    def __init__(self, engine, tokenizer, text_vocab: int, stop_ids=(),
                 max_new_tokens: int = 256, text_limit: int | None = None,
                 message_start: int | None = None):
        self.engine, self.tokenizer = engine, tokenizer
        self.message_start = message_start
        # states that copy (model.state.ModelState) can be kept; an engine without them
        # (a llama.cpp context) reads every prompt whole
        copies = hasattr(engine, "consume") and hasattr(engine.new_state(), "copy")
        self.cache = PromptCache() if copies else None
        self.text_vocab = int(text_vocab)
        # ids a reply may hold: the base tokenizer's own (below the fillers and GPU tokens)
        self.text_limit = min(int(text_vocab), text_vocab if text_limit is None
                              else int(text_limit))
        self.stop_ids = set(int(i) for i in stop_ids)
        self.max_new_tokens = max_new_tokens
        self.stats: dict = {}

    @classmethod
    def from_directory(cls, directory: str | Path, engine, text_vocab: int,
                       max_new_tokens: int = 256) -> TextModel:
        from tokenizers import Tokenizer

        directory = Path(directory)
        path = directory / "tokenizer.json"
        if not path.is_file():
            raise TextModelError(f"{directory} has no tokenizer.json (merge a base that has "
                                 f"one to chat in text)")
        tokenizer = Tokenizer.from_file(str(path))
        stops = {tokenizer.token_to_id(t) for t in END_TOKENS} - {None}
        for name in ("generation_config.json", "config.json"):
            if (directory / name).is_file():
                eos = json.loads((directory / name).read_text()).get("eos_token_id")
                stops |= set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        names = tokenizer.get_vocab(with_added_tokens=True)
        # the first filler or GPU token, or the tokenizer's end (a base's padded rows
        # past its last token, e.g. 151,669 of Qwen3's 151,936, decode to nothing)
        not_text = [i for name, i in names.items() if name.startswith(NOT_TEXT_PREFIXES)]
        return cls(engine, tokenizer, text_vocab, stops, max_new_tokens,
                   min(not_text, default=max(names.values(), default=text_vocab - 1) + 1),
                   tokenizer.token_to_id(MESSAGE_START))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def check_line(self, line: str) -> None:
        """TextModelError for a line the text half must not read: too long, or holding
        the name of a token that is not text."""
        if len(line) > MAX_LINE_CHARS:
            raise TextModelError(f"the line is {len(line):,} characters; a chat line takes "
                                 f"at most {MAX_LINE_TOKENS:,} tokens")
        ids = self.encode(line)
        named = next((i for i in ids if i >= self.text_limit), None)
        if named is not None:
            raise TextModelError(f"the line holds {self.tokenizer.id_to_token(named)}, the "
                                 "name of a GPU or reserved token, not text: GPU tokens are "
                                 "written by launches (/run FILE.cu ...), never typed")
        if len(ids) > MAX_LINE_TOKENS:
            raise TextModelError(f"the line is {len(ids):,} tokens; a chat line takes at "
                                 f"most {MAX_LINE_TOKENS:,} (its prefill would take minutes)")

    def _greedy(self, logits) -> int:
        """argmax over the text ids only (first index on ties, as Engine.greedy)."""
        import numpy as np

        return int(np.argmax(np.asarray(logits)[:self.text_limit]))

    def generate_ids(self, ids: list[int]) -> list[int]:
        """Greedy ids after the prompt `ids` (the engine's own generate loop, timed:
        `stats` holds the prompt's tokens, how many of them came from the prompt cache,
        the time to the first token and the tokens per second after it)."""
        start = time.perf_counter()
        if self.cache is not None:
            state, cached = self._read_prompt(ids)
            logits = self.engine.step(state, ids[-1])
        else:
            state, cached = self.engine.new_state(), 0
            last = getattr(self.engine, "prefill_last", None)  # TextEngine: no head per token
            logits = last(state, ids) if last else self.engine.prefill(state, ids)[-1]
        out = [self._greedy(logits)]
        first = time.perf_counter()
        while out[-1] not in self.stop_ids and len(out) < self.max_new_tokens:
            out.append(self._greedy(self.engine.step(state, out[-1])))
        rest = time.perf_counter() - first
        if self.cache is not None:   # the state has read the prompt and out[:-1]
            self.cache.store(list(ids) + out[:-1], state)
        self.stats = {"prompt_tokens": len(ids), "cached_tokens": cached,
                      "tokens": len(out),
                      "first_token_s": first - start,
                      "tokens_per_s": (len(out) - 1) / rest if len(out) > 1 and rest else None}
        for token in out:
            if token >= self.text_vocab:
                raise TextModelError(f"the model wrote GPU token {token} at a text position")
        return out[:-1] if out and out[-1] in self.stop_ids else out

    def _read_prompt(self, ids: list[int]):
        """A state after all of `ids` but the last, from the longest cached prefix on,
        stopping before each message to cache the state there (the next turn's or a
        retry's prompt shares them); returns (state, tokens taken from the cache)."""
        cached, state = self.cache.restore(ids, self.engine.new_state)
        done = cached
        stops = [p for p in range(done + 1, len(ids) - 1) if ids[p] == self.message_start]
        for stop in stops + [len(ids) - 1]:
            if stop > done:
                self.engine.consume(state, ids[done:stop])
                done = stop
                self.cache.store(ids[:stop], state)
        return state, cached

    def generate(self, prompt: str) -> str:
        ids = self.encode(prompt)
        if not ids:
            raise TextModelError("empty prompt")
        return self.tokenizer.decode(self.generate_ids(ids), skip_special_tokens=True)
