"""cli.chat_run: a chat's `/run FILE.cu OPTIONS` line. OPTIONS are `qgpu run`'s own: the
line is read by its argument parser (cli.run.add_arguments: --grid/--block as dim3,
--arg, --kernel, --shared-bytes, --symbol, --budget, --printf-words, --check, --forced,
--html, -I, --list) and launched by its `run` on the chat's loaded machine, so a /run
takes what `qgpu run` takes and fails as it fails; the reply adds the kernel's printf
output and the decoded records. Options that choose another engine or model (--model,
--engine, --device) or another output (--json) do not apply in a chat and are refused.
It lives with the CLI (it is `qgpu run`), and `qgpu chat` hands it to its ChatSession."""

from __future__ import annotations

import argparse
import shlex

from qgpu.chat.kernels import KernelRequestError, KernelRun, LaunchRequest, records_of

USAGE = "usage: /run FILE.cu --grid G --block B --arg NAME=VALUE ... (qgpu run's options)"


class _LineParser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting (a chat goes on)."""

    def error(self, message):
        raise KernelRequestError(f"/run: {message} ({USAGE})")

    def exit(self, status=0, message=None):
        raise KernelRequestError(f"/run: {message or USAGE}")


def parse_line(line: str) -> argparse.Namespace:
    """`qgpu run`'s arguments from a /run line (KernelRequestError: one line)."""
    from qgpu.cli.run import add_arguments

    try:
        words = shlex.split(line)
    except ValueError as exc:   # an unbalanced quote
        raise KernelRequestError(f"/run: cannot split the line into words ({exc})") from None
    if len(words) < 2 or words[0] != "/run":
        raise KernelRequestError(USAGE)
    parser = _LineParser(prog="/run", add_help=False)
    add_arguments(parser)
    args = parser.parse_args(words[1:])
    other = [flag for flag, given in (("--model", args.model is not None),
                                      ("--engine", args.engine != "model"),
                                      ("--device", args.device is not None),
                                      ("--json", args.json)) if given]
    if other:
        raise KernelRequestError(f"/run: {', '.join(other)} does not apply in a chat (/run "
                                 "launches on the chat's model and shows its results)")
    return args


def run_line(machine, line: str, check: bool = True) -> list[KernelRun] | str:
    """The launches of a /run line on `machine` (a runtime.checkpoint.CheckpointMachine;
    several with an --arg given several times), or the kernel listing of --list."""
    from qgpu.cli.run import run

    args = parse_line(line)
    args.model = str(machine.directory or "the chat's model")
    args.machine = machine
    args.check = args.check or check
    r = run(args)
    if "listing" in r:
        return r["listing"]
    return [_kernel_run(args, one) for one in r.get("launches", [r])]


def _kernel_run(args, r: dict) -> KernelRun:
    if "error" in r:   # one failed launch among several: its error, after what it printed
        raise KernelRequestError(f"{r['printed']}{r['error']}")
    request = LaunchRequest("", r["grid"], r["block"], list(args.arg), args.kernel,
                            args.file)
    result = r["result"]
    return KernelRun(request, r["kernel"], r["before"], r["args"], r["scalars"],
                     records_of(result), r["tokens"], args.check, r["printed"])
