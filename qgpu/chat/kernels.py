"""chat.kernels: the host side of a kernel launch in a chat: a ```cuda block and its
`// launch:` line out of a reply, the launch's arguments (cuda.launch_args), compiling and
running on the machine part of the loaded checkpoint (runtime.checkpoint: GPU tokens in
the merged vocabulary, results read from its state), readable records.

The host encodes and decodes; the model writes every token of the trace. With `check`
the interpreter replays the launch and the first differing token is an error
(runtime.check)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import numpy as np

from qgpu.cuda import compile as compile_cuda
from qgpu.cuda.launch_args import parse_args, pick_kernel
from qgpu.errors import QgpuError
from qgpu.protocol import Launch, decode_trace
from qgpu.runtime.checkpoint import engine_name

CUDA_BLOCK = re.compile(r"```(?:cuda|cu|c\+\+|cpp|c)?[ \t]*\n(.*?)```", re.S | re.I)
LAUNCH_LINE = re.compile(r"//\s*launch:\s*(.*)")


class KernelRequestError(QgpuError):
    """A reply or a /run line the host cannot turn into a launch."""


@dataclass
class LaunchRequest:
    source: str
    grid: int
    block: int
    args: list[str]  # NAME=VALUE
    kernel: str | None = None
    filename: str = "chat.cu"


@dataclass
class KernelRun:
    request: LaunchRequest
    kernel: str
    before: dict
    after: dict  # pointer parameters' final contents (read from the model's state)
    scalars: dict
    records: list[str]
    tokens: int
    check: bool
    printed: str = ""   # the kernel's printf output, as a GPU prints it

    def summary(self) -> str:
        lines = [f"{self.kernel}<<<{self.request.grid}, {self.request.block}>>> on the "
                 f"model: {self.tokens} trace tokens"
                 + (", token-exact vs the interpreter" if self.check else "")]
        for name, value in self.scalars.items():
            lines.append(f"  {name} = {value}")
        for name, values in self.after.items():
            lines.append(f"  {name}: {self.before[name]} -> {values}")
        if self.printed:
            lines += ["printf:"] + [f"  {t}" for t in self.printed.rstrip("\n").split("\n")]
        return "\n".join(lines)


def extract_cuda(reply: str) -> str:
    """The first ```cuda block of a reply."""
    found = CUDA_BLOCK.search(reply)
    if found is None:
        raise KernelRequestError("the reply has no ```cuda code block")
    return found.group(1)


def parse_launch_words(words: list[str]) -> tuple[int, int, list[str], str | None]:
    """grid, block, NAME=VALUE args, kernel name from `grid G block B arg N=V ...` or the
    --grid/--block/--arg/--kernel spelling."""
    grid, block, args, kernel = 1, None, [], None
    i = 0
    while i < len(words):
        key = words[i].lstrip("-")
        if key in ("grid", "block", "arg", "kernel") and i + 1 < len(words):
            value = words[i + 1]
            i += 2
        elif "=" in words[i] and key.split("=", 1)[0] in ("grid", "block", "kernel"):
            key, value = key.split("=", 1)
            i += 1
        else:
            raise KernelRequestError(f"cannot read '{words[i]}' in the launch (expected grid "
                                     f"G block B arg NAME=VALUE ...)")
        try:
            if key == "grid":
                grid = int(value)
            elif key == "block":
                block = int(value)
            elif key == "kernel":
                kernel = value
            else:
                args.append(value)
        except ValueError:
            raise KernelRequestError(f"{key} {value!r} is not an integer") from None
    if block is None:
        raise KernelRequestError("the launch names no block size")
    return grid, block, args, kernel


def request_from_reply(reply: str) -> LaunchRequest:
    source = extract_cuda(reply)
    found = LAUNCH_LINE.search(source)
    if found is None:
        raise KernelRequestError("the kernel has no '// launch: grid 1 block B arg ...' line")
    try:
        words = shlex.split(found.group(1))
    except ValueError as exc:   # an unbalanced quote
        raise KernelRequestError(f"cannot read the '// launch:' line ({exc})") from None
    grid, block, args, kernel = parse_launch_words(words)
    return LaunchRequest(source, grid, block, args, kernel)


def _values(a) -> list[int]:
    return [int(x) for x in a]


def run_request(machine, request: LaunchRequest, check: bool = True) -> KernelRun:
    """Compile and run on `machine` (a runtime.checkpoint.CheckpointMachine)."""
    module = compile_cuda(request.source, filename=request.filename)
    kernel = pick_kernel(module, request.kernel)
    values = parse_args(kernel, request.args)
    before = {n: _values(v) for n, v in values.items() if isinstance(v, np.ndarray)}
    result = kernel(request.grid, request.block, values,
                    engine=engine_name(machine, check=check))
    return KernelRun(request, kernel.name, before,
                     {p.name: _values(values[p.name]) for p in kernel.params if p.pointer},
                     {p.name: values[p.name] for p in kernel.params if not p.pointer},
                     records_of(result), len(result.trace), check, result.printed)


def records_of(result) -> list[str]:
    """A launch result's trace as readable records."""
    launch = Launch(result.program, result.grid, result.block, [])
    try:
        return [str(r) for r in decode_trace(launch, list(result.trace))]
    except QgpuError as exc:  # readable records are a view; the results stand
        return [f"(records do not decode: {exc})"]
