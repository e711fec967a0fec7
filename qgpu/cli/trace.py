"""cli.trace: `qgpu trace FILE.json`: decode a launch's token stream (a JSON object with
"prompt" and "trace" lists of token ids, or a plain list: the prompt then the trace after
GO) into readable records. A file that is not such a stream is a ProtocolError naming
what is wrong (one line), never a traceback. With --html PATH, also the launch as one
page (qgpu.view); the object may also carry "kernel", "engine", "margins" (one per trace
token) and "expected" (the interpreter's trace) for it."""

from __future__ import annotations

import json
from pathlib import Path

from qgpu.cli.html import MAX_STREAM_BYTES, add_html_argument, check_html, write_page
from qgpu.errors import ProtocolError
from qgpu.files import read_text_limited
from qgpu.protocol import VOCAB_SIZE, decode_prompt, iter_trace, name, tok


def add_arguments(parser) -> None:
    parser.add_argument("file", help="JSON token stream")
    parser.add_argument("--raw", action="store_true", help="also print every token's name")
    add_html_argument(parser)


def _ids(value, what: str) -> list[int]:
    if not isinstance(value, list):
        raise ProtocolError(f"{what} must be a JSON list of token ids, not "
                            f"{type(value).__name__}")
    for i, t in enumerate(value):
        if isinstance(t, bool) or not isinstance(t, int):
            raise ProtocolError(f"{what}[{i}] = {json.dumps(t)[:40]} is not a token id")
        if not 0 <= t < VOCAB_SIZE:
            raise ProtocolError(f"{what}[{i}] = {t} is outside the vocabulary "
                                f"(0..{VOCAB_SIZE - 1})")
    return value


def parse_stream(text: str | bytes, what: str = "stream") -> tuple[list[int], list[int]]:
    """(prompt, trace) token ids from a token-stream file's text."""
    return load_stream(text, what)[:2]


def load_stream(text: str | bytes, what: str = "stream") -> tuple[list[int], list[int], dict]:
    """(prompt, trace, extra): extra holds the object's optional "kernel", "engine",
    "margins" and "expected" (checked) for --html."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:   # JSONDecodeError, UnicodeDecodeError
        raise ProtocolError(f"{what} is not JSON ({' '.join(str(exc).split())[:120]})") \
            from None
    if isinstance(data, dict):
        missing = [k for k in ("prompt", "trace") if k not in data]
        if missing:
            raise ProtocolError(f"{what}: the JSON object has no {' or '.join(missing)} "
                                f"(expected {{\"prompt\": [...], \"trace\": [...]}})")
        return _ids(data["prompt"], "prompt"), _ids(data["trace"], "trace"), _extra(data)
    tokens = _ids(data, what)
    go = tok("GO")
    if go not in tokens:
        raise ProtocolError(f"{what}: no GO token ({go}) ends a prompt in the list")
    cut = tokens.index(go) + 1
    return tokens[:cut], tokens[cut:], {}


def _extra(data: dict) -> dict:
    extra = {k: data[k] for k in ("kernel", "engine") if isinstance(data.get(k), str)}
    if data.get("expected") is not None:
        extra["expected"] = _ids(data["expected"], "expected")
    margins = data.get("margins")
    if margins is not None:
        if not isinstance(margins, list) or not all(
                isinstance(m, int | float) and not isinstance(m, bool) for m in margins):
            raise ProtocolError("margins must be a JSON list of numbers")
        extra["margins"] = margins
    return extra


def main(args) -> int:
    check_html(args.html, args.file)
    text = read_text_limited(args.file, MAX_STREAM_BYTES, "token stream")
    prompt, trace, extra = load_stream(text, args.file)
    launch = decode_prompt(prompt)
    print(f"launch: grid {launch.grid}, block {launch.block}, "
          f"{len(launch.program.blocks)} blocks, prompt {len(prompt)} tokens")
    if args.raw:
        print(" ".join(name(t) for t in trace))
    for rec in iter_trace(launch, trace):  # each line as soon as it is decoded
        print(rec)
    if args.html:
        from qgpu.view import launch_data

        write_page(args.html, launch_data(
            prompt, trace, kernel=extra.get("kernel", ""), engine=extra.get("engine", ""),
            margins=extra.get("margins"), expected=extra.get("expected"),
            note=f"Decoded from the token stream {Path(args.file).name}."))
    return 0
