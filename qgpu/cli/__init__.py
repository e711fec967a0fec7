"""cli: the `qgpu` command. Each subcommand lives in its own module of this package and
registers itself in SUBCOMMANDS (name -> module); the module has `add_arguments(parser)`
and `main(args) -> int`.

Every error a user can cause ends the command with one line on stderr, `qgpu CMD: error:
...`, and exit status 1: QgpuErrors, OS errors (files), and command lines argparse
refuses (UsageError instead of argparse's usage text and exit 2). Ctrl-C prints `qgpu
CMD: interrupted` and exits 130; a closed stdout (`qgpu trace t.json | head -1`) ends the
command quietly with exit 141, as a C tool killed by SIGPIPE.

Owns: the command line only. May import every package below it; nothing imports cli.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from qgpu.errors import QgpuError, UsageError

# name -> module (relative to qgpu.cli), imported lazily so a broken optional stage
# does not break the other commands.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "run the dot-product demo on the machine"),
    "asm": ("asm", "assemble, disassemble or run a machine-assembly program"),
    "trace": ("trace", "decode a launch token stream into readable records"),
    "run": ("run", "compile a CUDA file and launch one kernel"),
    "validate-gpu": ("validate_gpu", "run the kernel suite on a real NVIDIA GPU and compare"),
    "merge": ("merge", "merge a compiled circuit into a base Qwen3.5 checkpoint"),
    "export-machine": ("export_machine", "write the compiled machine as a checkpoint"),
    "export-gguf": ("export_gguf", "write a merged or exported machine checkpoint as GGUF"),
    "chat": ("chat", "chat with a merged checkpoint; /run launches kernels on its machine"),
}
INTERRUPTED = 130     # 128 + SIGINT
BROKEN_PIPE = 141     # 128 + SIGPIPE


class Parser(argparse.ArgumentParser):
    """argparse with its complaints raised as UsageError (one line, exit 1) instead of
    printed with the usage text and exit 2; subcommand parsers are Parsers too."""

    def error(self, message: str):
        one_line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        raise UsageError(f"{one_line} (see {self.prog} --help)", self.prog)


def build_parser() -> tuple[Parser, dict]:
    """The `qgpu` parser and its subcommand modules by name."""
    parser = Parser(prog="qgpu", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (modname, helptext) in SUBCOMMANDS.items():
        mod = importlib.import_module(f"qgpu.cli.{modname}")
        modules[name] = mod
        mod.add_arguments(sub.add_parser(name, help=helptext, description=helptext))
    return parser, modules


def _say(prog: str, text: str) -> None:
    try:
        print(f"{prog}: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final
    flush does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _command(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line (its first word that is not an option)."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    command = _command(argv)
    prog = f"qgpu {command}" if command in SUBCOMMANDS else "qgpu"
    try:
        parser, modules = build_parser()
        try:
            args = parser.parse_args(argv)
        except UsageError as exc:
            where = prog if exc.prog == "qgpu" else exc.prog
            _say(where, f"error: {exc}".replace("(see qgpu --help)",
                                                 f"(see {where} --help)"))
            return 1
        prog = f"qgpu {args.command}"
        try:
            status = int(modules[args.command].main(args) or 0)
            sys.stdout.flush()     # a closed pipe shows here, not at the interpreter's exit
            return status
        except (QgpuError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            one_line = " ".join(str(exc).split()) or type(exc).__name__
            _say(prog, f"error: {one_line}")
            return 1
    except KeyboardInterrupt:
        _say(prog, "interrupted")
        return INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
