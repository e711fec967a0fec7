"""cli: the `qgpu` command. Each subcommand lives in its own module of this package and
registers itself in SUBCOMMANDS (name -> module); the module has `add_arguments(parser)`
and `main(args) -> int`.

Owns: the command line only. May import every package below it; nothing imports cli.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from qgpu.errors import QgpuError

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qgpu", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (modname, helptext) in SUBCOMMANDS.items():
        mod = importlib.import_module(f"qgpu.cli.{modname}")
        modules[name] = mod
        mod.add_arguments(sub.add_parser(name, help=helptext, description=helptext))
    args = parser.parse_args(argv)
    try:
        return int(modules[args.command].main(args) or 0)
    except (QgpuError, OSError) as exc:
        print(f"qgpu {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
