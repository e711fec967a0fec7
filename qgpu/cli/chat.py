"""cli.chat: `qgpu chat --model DIR [--advanced]`: a chat with a merged checkpoint
(qgpu.chat). Lines come from stdin (a terminal or a script); `/run FILE.cu --grid G
--block B --arg NAME=VALUE ...` launches a kernel on the machine part (`qgpu run`'s launch
options); `--advanced` makes every line a vector/matrix question the language part
answers with a kernel the machine runs. `/quit` or end of input stops.

A line the session cannot take is one `error:` line and the next line is read: a /run
that fails, a line that is not UTF-8, a GPU token's name typed as text, a line longer
than the language part takes (chat.text.MAX_LINE_TOKENS); Ctrl-C during a reply stops
that reply only (Ctrl-C at the prompt ends the chat)."""

from __future__ import annotations

import sys


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR",
                        help="a merged checkpoint (qgpu merge --circuit machine)")
    parser.add_argument("--advanced", action="store_true",
                        help="answer vector/matrix questions with kernels run on the machine")
    parser.add_argument("--max-new-tokens", type=int, default=512,
                        help="text tokens per reply (default 512)")
    parser.add_argument("--text-weights", choices=("bf16", "q8"), default="bf16",
                        help="the language part's weights: bf16 (the base's own, its exact "
                             "greedy text) or q8 (8-bit blocks like GGUF's Q8_0, quantized at "
                             "load: NOT bit-equal to the base, and slower than bf16 today)")
    parser.add_argument("--no-check", action="store_true",
                        help="do not replay launches on the interpreter")


def _need_chat_extra() -> None:
    """The chat's text half needs the `chat` extra (tokenizers, transformers' template
    renderer, jinja2); say so up front, before the checkpoint is loaded."""
    import importlib.util

    from qgpu.errors import QgpuError

    missing = [m for m in ("tokenizers", "transformers", "jinja2")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise QgpuError(f"qgpu chat needs the chat extra (missing: {', '.join(missing)}): "
                        f"pip install 'qgpu[chat]'")


def open_session(model: str, advanced: bool = False, max_new_tokens: int = 512,
                 check: bool = True, text_weights: str = "bf16"):
    from qgpu.chat import ChatSession
    from qgpu.chat.prompts import ChatTemplate
    from qgpu.chat.text import TextModel, TextModelError
    from qgpu.runtime.checkpoint import load_machine_checkpoint, read_info

    info = read_info(model)
    if info.get("gpu_token_offset", 0) or info.get("base_layers", 0):
        _need_chat_extra()   # a merged model: its text half needs a tokenizer

    machine = load_machine_checkpoint(model)
    try:
        engine = machine.inner
        if text_weights != "bf16" and machine.merged:
            from qgpu.model.text_engine import TextEngine

            engine = TextEngine.from_directory(model, text_weights)
        language = TextModel.from_directory(model, engine, machine.gpu_token_offset,
                                            max_new_tokens) if machine.merged else None
    except TextModelError as exc:
        print(f"qgpu chat: {exc}; /run launches only", file=sys.stderr)
        language = None
    from qgpu.cli.chat_run import run_line

    return ChatSession(machine, language, advanced=advanced, check=check,
                       template=ChatTemplate.from_directory(model), run_line=run_line)


def main(args) -> int:
    session = open_session(args.model, args.advanced, args.max_new_tokens, not args.no_check,
                           args.text_weights)
    interactive = sys.stdin.isatty()
    mode = "advanced" if args.advanced else "normal"
    print(f"qgpu chat ({mode} mode): /run FILE.cu --grid G --block B --arg NAME=VALUE ... "
          f"(qgpu run's launch options) launches a kernel; /quit ends", file=sys.stderr)
    while True:
        if interactive:
            print("> ", end="", flush=True, file=sys.stderr)
        raw = (sys.stdin.buffer.readline() if hasattr(sys.stdin, "buffer")  # bytes: a
               else sys.stdin.readline().encode())  # line that is not UTF-8 is refused
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            print(f"error: the line is not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                  f"offset {exc.start}); nothing was run", flush=True)
            continue
        if not line or line.strip() in ("/quit", "/exit"):
            return 0
        if not line.strip():
            continue
        try:
            reply = session.handle(line)
        except KeyboardInterrupt:
            print("error: interrupted; the chat goes on (/quit ends it)", flush=True)
            continue
        print(reply.text, flush=True)
        stats = getattr(session.language, "stats", None)
        if reply.kind == "text" and stats:
            rate = stats["tokens_per_s"]
            print(f"[{stats['tokens']} tokens; first after {stats['first_token_s']:.2f} s "
                  f"({stats['prompt_tokens']} prompt tokens)"
                  + (f", then {rate:.2f} tokens/s]" if rate else "]"),
                  file=sys.stderr, flush=True)
