"""view.data: one launch as the plain data the page draws (JSON-able dicts and lists).

Everything comes from the launch's token streams (the prompt rebuilds the program, the
launch configuration and the initial memory; the trace gives the executed blocks, with
qgpu.protocol's decoder), plus what only the host knows and the page only shows: the
CUDA source and PTX with each machine block's origins, the arrays' places in memory, the
model's top-1 minus top-2 logit margin per written token, the interpreter's trace for
`--check`, and the final memory the launch returned.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from qgpu.errors import ProtocolError
from qgpu.isa import limits
from qgpu.isa.asm import format_instr, format_terminator
from qgpu.isa.program import Bar, Exit, Program
from qgpu.protocol import decode_prompt, decode_trace, name
from qgpu.protocol.vocab import fields_of

_FILE = re.compile(r'\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)")


@dataclass
class Sources:
    """What the front end knows: CUDA text, PTX text, per machine block its origins
    (cuda.codegen.block_origins: {"ptx": [line], "source": [(file, line)]})."""
    source: str = ""
    filename: str = ""
    ptx: str = ""
    origins: list[dict] = field(default_factory=list)


@dataclass
class Arrays:
    """Where the kernel's arrays are: name -> (first global word, words), and which are
    signed (shown as int32, else uint32)."""
    layout: dict[str, tuple[int, int]] = field(default_factory=dict)
    signed: dict[str, bool] = field(default_factory=dict)
    scalars: dict[str, int] = field(default_factory=dict)


def _block_lines(prog: Program) -> list[dict]:
    out = []
    for b in prog.blocks:
        lines = [" ; ".join(format_instr(i) for i in st) for st in b.stages]
        if b.writeback:
            lines.append(".writeback " + ", ".join(f"r{r}" for r in sorted(b.writeback)))
        lines.append(format_terminator(b.terminator))
        out.append({"lines": lines, "bar": isinstance(b.terminator, Bar),
                    "exit": isinstance(b.terminator, Exit)})
    return out


def _steps(launch, trace: list[int]) -> list[dict]:
    records = decode_trace(launch, trace)
    steps = []
    for k, rec in enumerate(records):
        if rec.kind != "exec":
            continue
        end = records[k + 1].position if k + 1 < len(records) else len(trace)
        epoch = fields_of(trace[rec.position])[1][3]
        steps.append({"pos": rec.position, "end": end, "block": rec.block, "warp": rec.warp,
                      "active": list(rec.active), "epoch": epoch, "taken": list(rec.taken),
                      "regs": [[r, [lanes[ln] for ln in rec.active]]
                               for r, lanes in rec.registers.items()],
                      "writes": [list(w) for w in rec.mem_writes]})
    return steps


def _present(launch) -> list[list[bool]]:
    """Per warp, which lanes hold a thread (the last warp of a CTA may be partial)."""
    per_cta = -(-launch.block // limits.LANES)
    return [[(w % per_cta) * limits.LANES + ln < launch.block for ln in range(limits.LANES)]
            for w in range(launch.grid * per_cta)]


def _token_names(tokens: list[int]) -> list[str]:
    out = []
    for t in tokens:
        try:
            out.append(name(t))
        except ValueError:
            out.append(f"id {t}?")
    return out


def _same_file(f: str, filename: str) -> bool:
    return not filename or f == filename or f.rsplit("/", 1)[-1] == filename.rsplit("/", 1)[-1]


def _source_lines(origin: dict, sources: Sources) -> list[int]:
    """The CUDA lines a machine block came from. Operations inlined from a header (an
    atomic's wrapper) carry the header's .loc: then the last .loc of the source file
    before the block's first PTX line, the call site, stands for them."""
    lines = {ln for f, ln in origin.get("source", ()) if _same_file(f, sources.filename)}
    ptx_lines = origin.get("ptx", ())
    if lines or not ptx_lines or not sources.ptx:
        return sorted(lines)
    text = sources.ptx.splitlines()
    files = {m.group(1) for m in (_FILE.match(t.strip()) for t in text)
             if m and _same_file(m.group(2), sources.filename)}
    for t in reversed(text[:min(ptx_lines) - 1]):
        m = _LOC.match(t.strip())
        if m and m.group(1) in files and int(m.group(2)):
            return [int(m.group(2))]
    return []


def _margins(margins: list[float] | None) -> list[float | None] | None:
    """The margins as the page shows them: one that is not a finite number (a NaN from
    a trace file) is null, the page's 'no margin'."""
    if margins is None:
        return None
    return [float(m) if math.isfinite(m) else None for m in margins]


def launch_data(prompt: list[int], trace: list[int], *, kernel: str = "", engine: str = "",
                sources: Sources | None = None, arrays: Arrays | None = None,
                final_memory: list[int] | None = None, margins: list[float] | None = None,
                expected: list[int] | None = None, note: str = "", printed: str = "") -> dict:
    """The page's data for one launch. `trace` is what the engine wrote (first EXEC ..
    HALT); `expected` the interpreter's trace when the launch was checked; `printed` the
    device's printf output (cuda.printf, formatted by the host); when the
    written trace does not decode (a mismatch), the steps are the expected trace's and
    the strip shows the written tokens with the first difference."""
    launch = decode_prompt(prompt)
    decoded_from = "trace"
    try:
        steps = _steps(launch, trace)
    except ProtocolError as err:
        if expected is None:
            raise
        steps = _steps(launch, expected)
        decoded_from = "expected"
        note = (note + " " if note else "") + f"The written trace does not decode ({err}); " \
            "the steps shown are the interpreter's."
    mismatch = None
    if expected is not None:
        for i in range(max(len(trace), len(expected))):
            a = expected[i] if i < len(expected) else None
            b = trace[i] if i < len(trace) else None
            if a != b:
                mismatch = {"pos": i, "expected": a, "written": b,
                            "expected_name": _token_names([a])[0] if a is not None else "end",
                            "written_name": _token_names([b])[0] if b is not None else "end"}
                break
    arrays = arrays or Arrays()
    sources = sources or Sources()
    src_lines = [_source_lines(o, sources) for o in sources.origins]
    return {
        "kernel": kernel or launch.program.name, "engine": engine,
        "grid": launch.grid, "block": launch.block, "lanes": limits.LANES,
        "present": _present(launch),
        "prompt_tokens": len(prompt), "tokens": trace, "names": _token_names(trace),
        "steps": steps, "decoded_from": decoded_from,
        "program": _block_lines(launch.program),
        "source": {"name": sources.filename, "text": sources.source},
        "ptx": sources.ptx,
        "origins": [{"ptx": list(o.get("ptx", ())), "source": s}
                    for o, s in zip(sources.origins, src_lines, strict=True)],
        "memory": {"initial": list(launch.memory), "global_words": limits.MODEL_GLOBAL_WORDS,
                   "shared_words": limits.MODEL_SHARED_WORDS, "final": final_memory},
        "arrays": [{"name": n, "base": b, "size": s, "signed": arrays.signed.get(n, True)}
                   for n, (b, s) in arrays.layout.items()],
        "scalars": dict(arrays.scalars),
        "margins": _margins(margins), "expected": expected, "mismatch": mismatch, "note": note,
        "printed": printed,
    }
