"""cli.trace: `qgpu trace FILE.json`: decode a launch's token stream (a JSON object with
"prompt" and "trace" lists of token ids, or a plain list: the prompt then the trace after
GO) into readable records. With --html PATH, also the launch as one page (qgpu.view); the
object may also carry "kernel", "engine", "margins" (one per trace token) and "expected"
(the interpreter's trace) for it."""

from __future__ import annotations

import json
from pathlib import Path

from qgpu.cli.html import add_html_argument, write_page
from qgpu.protocol import decode_prompt, decode_trace, name, tok


def add_arguments(parser) -> None:
    parser.add_argument("file", help="JSON token stream")
    parser.add_argument("--raw", action="store_true", help="also print every token's name")
    add_html_argument(parser)


def main(args) -> int:
    data = json.loads(Path(args.file).read_text())
    if isinstance(data, dict):
        prompt, trace = data["prompt"], data["trace"]
    else:
        cut = data.index(tok("GO")) + 1
        prompt, trace = data[:cut], data[cut:]
    launch = decode_prompt(prompt)
    print(f"launch: grid {launch.grid}, block {launch.block}, "
          f"{len(launch.program.blocks)} blocks, prompt {len(prompt)} tokens")
    if args.raw:
        print(" ".join(name(t) for t in trace))
    for rec in decode_trace(launch, trace):
        print(rec)
    if args.html:
        from qgpu.view import launch_data

        extra = data if isinstance(data, dict) else {}
        write_page(args.html, launch_data(
            prompt, trace, kernel=extra.get("kernel", ""), engine=extra.get("engine", ""),
            margins=extra.get("margins"), expected=extra.get("expected"),
            note=f"Decoded from the token stream {Path(args.file).name}."))
    return 0
