"""cli.asm: `qgpu asm FILE.s`: assemble (and check) a machine-assembly file, print it back
disassembled, or run it on the interpreter and print the trace. The trace is the model's
(protocol v5), so a run takes the model machine's sizes (isa.limits' MODEL_*)."""

from __future__ import annotations

from pathlib import Path

from qgpu.cli.html import MAX_SOURCE_BYTES
from qgpu.errors import LaunchError
from qgpu.files import read_text_limited
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble, disassemble
from qgpu.protocol import decode_prompt, decode_trace, encode_prompt, expected_trace


def _ints(text: str) -> list[int]:
    """--mem's words: integers (decimal or 0x) that fit 32 bits, signed or unsigned."""
    out = []
    for i, item in enumerate(x.strip() for x in text.split(",") if x.strip()):
        try:
            v = int(item, 0)
        except ValueError:
            raise LaunchError(f"--mem: word {i} '{item}' is not an integer") from None
        if not -(1 << 31) <= v < 1 << 32:
            raise LaunchError(f"--mem: word {i} = {v} does not fit 32 bits")
        out.append(v)
    if len(out) > limits.MODEL_GLOBAL_WORDS:
        raise LaunchError(f"--mem: {len(out)} words; global memory has "
                          f"{limits.MODEL_GLOBAL_WORDS} (the model machine's, whose trace "
                          f"qgpu asm prints)")
    return out


def add_arguments(parser) -> None:
    parser.add_argument("file", help="machine assembly file")
    parser.add_argument("--run", action="store_true", help="run it on the interpreter")
    parser.add_argument("--grid", type=int, default=1)
    parser.add_argument("--block", type=int, default=limits.LANES)
    parser.add_argument("--mem", default="", help="initial global words, comma-separated")


def main(args) -> int:
    prog = assemble(read_text_limited(args.file, MAX_SOURCE_BYTES, "assembly file"),
                    Path(args.file).stem)
    if not args.run:
        print(disassemble(prog), end="")
        return 0
    memory = _ints(args.mem)
    limits.check_launch_shape(args.grid, args.block)
    if not limits.fits_model(args.grid, args.block):
        raise LaunchError(f"a block of {args.block} threads in a grid of {args.grid}: qgpu asm "
                          f"prints the model "
                          f"machine's trace, which runs 1..{limits.MODEL_MAX_CTAS} CTAs of "
                          f"1..{limits.MODEL_MAX_THREADS_PER_CTA} threads, "
                          f"{limits.MODEL_MAX_WARPS} warps in all")
    if len(prog.blocks) > limits.MODEL_ROM_BLOCKS:
        raise LaunchError(f"{len(prog.blocks)} blocks: qgpu asm prints the model machine's "
                          f"trace, whose ROM holds {limits.MODEL_ROM_BLOCKS}")
    result = run_launch(prog, args.grid, args.block, memory, sizes=limits.MODEL_MEMORY)
    prompt = encode_prompt(prog, args.grid, args.block, memory)
    trace = expected_trace(result.events)
    for rec in decode_trace(decode_prompt(prompt), trace):
        print(rec)
    used = max(len(memory), 1)
    print("memory:", [limits.s32(v) for v in result.memory[:used]])
    print(f"tokens: {len(trace)}")
    return 0
