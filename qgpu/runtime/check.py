"""runtime.check: `--check`, the model's trace against the interpreter's, token by token.
The first mismatch stops with its position, the record the interpreter expects there
and the record the model wrote (both decoded with the protocol's decoder)."""

from __future__ import annotations

from qgpu.errors import CheckMismatch, ProtocolError
from qgpu.interp import run_launch
from qgpu.isa.program import Program
from qgpu.protocol import Launch, decode_prompt, decode_trace, expected_trace, kind_of, name


def _record_at(launch: Launch, tokens: list[int], position: int) -> str:
    """The decoded record that contains `position` (or why it does not decode)."""
    try:
        records = decode_trace(launch, tokens)
    except ProtocolError as err:
        return f"(does not decode: {err})"
    best = None
    for rec in records:
        if rec.position <= position:
            best = rec
    return str(best) if best is not None else "(none)"


def _tokens_of_record(tokens: list[int], position: int) -> str:
    """The model's record up to `position`: its tokens from the last EXEC on, by name."""
    position = min(position, len(tokens) - 1)
    start = position
    while start > 0 and kind_of(tokens[start])[0] != "EXEC":
        start -= 1
    return " ".join(name(t) for t in tokens[start:position + 1])


def check_trace(program: Program, grid: int, block: int, memory, prompt: list[int],
                trace: list[int]) -> list[int]:
    """The interpreter's trace; raises CheckMismatch at the first difference."""
    res = run_launch(program, grid=grid, block=block, memory=list(memory) or None)
    want = expected_trace(res.events)
    launch = decode_prompt(prompt)
    for i in range(max(len(want), len(trace))):
        a = want[i] if i < len(want) else None
        b = trace[i] if i < len(trace) else None
        if a != b:
            got_rec = _tokens_of_record(trace, i)
            raise CheckMismatch(
                f"--check: token {i} of the trace differs: interpreter "
                f"{name(a) if a is not None else 'end'}, model "
                f"{name(b) if b is not None else 'end'}; expected record: "
                f"{_record_at(launch, want, i)}; model's record: {got_rec}")
    return want
