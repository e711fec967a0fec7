"""cli.demo: `qgpu demo`, the dot product of [1, 2, 3] and [4, 5, 6] on the machine: the
prompt and the trace as readable records, the token count, and the result (32)."""

from __future__ import annotations

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import decode_prompt, decode_trace, encode_prompt, expected_trace

# Hand-written machine assembly of `out[0] += a[i] * b[i]` for three threads.
DOT_ASM = """
.kernel dot
block 0:
  tid r1
  shl r2, r1, 2
  ld.global r3, [r2] ; ld.global r4, [r2+12]
  mul r5, r3, r4
  jmp 1
block 1:
  atom.global.add r6, [24], r5
  exit
"""


def add_arguments(parser) -> None:
    parser.add_argument("--quiet", action="store_true", help="print only the result")


def main(args) -> int:
    prog = assemble(DOT_ASM)
    memory = [1, 2, 3, 4, 5, 6, 0]           # a at word 0, b at word 3, out at word 6
    prompt = encode_prompt(prog, grid=1, block=3, memory=memory)
    result = run_launch(prog, grid=1, block=3, memory=memory)
    trace = expected_trace(result.events)
    if not args.quiet:
        print("dot([1, 2, 3], [4, 5, 6]) on qgpu (engine: interp)")
        print(f"prompt: {len(prompt)} tokens; trace written: {len(trace)} tokens")
        launch = decode_prompt(prompt)
        for rec in decode_trace(launch, trace):
            print("  " + str(rec))
    print(f"result: {result.memory[6]}")
    return 0
