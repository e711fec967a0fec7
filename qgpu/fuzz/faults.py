"""fuzz.faults: a fault fuzzer. Random machine programs whose memory operations use wild
addresses (register-computed from the thread index, random offsets: in bounds, out of
bounds, misaligned, wrapped past 2^32, in either space), loads, stores and atomics, and
divergent barriers, run on the interpreter; each launch either ends normally or faults
with a record (isa.faults). For every case the expected trace is decoded back by the
protocol's own decoder, which must find the same record (kind, lane, position, address,
block, warp) and so the same error text; with `model`, the launch also runs on the model
by teacher forcing (`--check --forced`), which must write every token of the trace,
TRAP record included.

    python -m qgpu.fuzz.faults --cases 2000 --seed 1 [--model] [--no-barriers]

Prints cases, faults by kind, clean launches, mismatches; exit 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter

from qgpu.errors import CheckMismatch, QgpuError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.faults import Fault
from qgpu.protocol import decode_prompt, decode_trace, encode_prompt, expected_trace

MEMORY_OPS = ["ld.global", "st.global", "atom.global.add", "ld.shared", "st.shared",
              "atom.shared.exch"]
OFFSETS = [0, 4, 8, 1, 2, 3, 60, 124, 128, 256, 508, 509, 512, 1024, 4096, -4, -1, 65536,
           0x7FFFFFFC, -0x80000000]


def random_program(rng: random.Random, barriers: bool = True) -> tuple[str, int, int]:
    """(assembly, grid, block): 1-3 blocks of address arithmetic and memory operations,
    sometimes (when barriers) a barrier that only some lanes reach first (a divergent
    barrier)."""
    lines = ["block 0:", "  tid r1"]
    barrier = rng.random() < 0.3 and barriers
    scale = 2 if barrier else rng.choice([0, 1, 2, 2, 2, 3, 5, 8])
    lines.append(f"  shl r2, r1, {scale}")
    lines.append(f"  add r2, r2, {rng.choice(OFFSETS)}" if rng.random() < 0.5
                 else "  mov r3, 7")
    for _ in range(rng.randint(1, 2)):
        op = rng.choice(MEMORY_OPS)
        off = rng.choice(OFFSETS) if rng.random() < 0.6 and not barrier else \
            4 * rng.randint(0, 4)
        if op.startswith("ld"):
            lines.append(f"  {op} r4, [r2{off:+d}]")
        elif op.startswith("st"):
            lines.append(f"  {op} [r2{off:+d}], r1")
        else:
            lines.append(f"  {op} r5, [r2{off:+d}], r1")
    # a block holds its reads before its writes: sort the memory lines (loads first)
    body = lines[2:]
    mem = [x for x in body if "[" in x]
    reads = [x for x in mem if x.strip().startswith("ld")]
    writes = [x for x in mem if not x.strip().startswith("ld")][:1]
    rest = [x for x in body if "[" not in x]
    lines = lines[:2] + rest + reads + writes
    while len(lines) - 1 > limits.STAGES:
        lines.pop()
    if barrier:                   # a barrier, divergent in some launches
        while len(lines) - 1 >= limits.STAGES:
            lines.pop()
        split = rng.randint(0, 8)
        lines += [f"  setlt.u r6, r1, {split}", "  br r6, 1, 2",
                  "block 1:", "  bar 3", "block 2:",
                  f"  bar {rng.choice([3, 4, 4])}", "block 3:", "  exit", "block 4:", "  exit"]
    else:
        lines.append("  exit")
    grid = rng.randint(1, 2)
    block = rng.randint(1, 8)
    return "\n".join(lines) + "\n", grid, block


def run_case(src: str, grid: int, block: int, memory: list[int], machine=None) -> str:
    """'clean' or the fault kind; raises AssertionError (decoder disagrees) or
    CheckMismatch (the model disagrees: ModelMiss when the interpreter faulted)."""
    prog = assemble(src)
    try:
        res = run_launch(prog, grid, block, memory, sizes=limits.MODEL_MEMORY)
        events, fault = res.events, None
    except Fault as f:
        events, fault = f.events, f
    trace = expected_trace(events)
    records = decode_trace(decode_prompt(encode_prompt(prog, grid, block, memory)), trace)
    if fault is not None:
        last = records[-1]
        assert last.kind == "trap" and last.trap == fault.trap, (last, fault.trap)
        assert str(last).endswith(str(fault)), (str(last), str(fault))
    else:
        assert records[-1].kind == "halt"
    if machine is not None:
        from qgpu.runtime.check import forced_launch

        try:
            forced_launch(machine, prog, grid, block, memory)
        except CheckMismatch as exc:
            if fault is not None:
                raise ModelMiss(fault.trap.kind, str(exc)) from None
            raise
    return "clean" if fault is None else fault.trap.kind


class ModelMiss(Exception):
    """The interpreter faulted and the model did not write the TRAP record."""


def campaign(cases: int, seed: int, machine=None, show: int = 3,
             barriers: bool = True) -> dict:
    """barriers=False: no divergent-barrier programs (e.g. for a machine merged without
    the fault detector, which does not detect them)."""
    rng = random.Random(seed)
    kinds: Counter = Counter()
    mismatches = []
    for n in range(cases):
        src, grid, block = random_program(rng, barriers)
        memory = [rng.randrange(1 << 32) for _ in range(rng.randint(0, 16))]
        try:
            kinds[run_case(src, grid, block, memory, machine)] += 1
        except ModelMiss as miss:
            kinds[f"missed by the model: {miss.args[0]}"] += 1
            mismatches.append((n, src, grid, block, miss.args[1][:300]))
        except (AssertionError, CheckMismatch) as exc:
            mismatches.append((n, src, grid, block, str(exc)[:300]))
        except QgpuError as exc:             # a launch the machine refuses
            kinds[f"refused: {str(exc)[:60]}"] += 1
    for case in mismatches[:show]:
        print("MISMATCH", *case, sep="\n", file=sys.stderr)
    return {"cases": cases, "kinds": dict(kinds), "mismatches": len(mismatches)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m qgpu.fuzz.faults", description=__doc__)
    p.add_argument("--cases", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--model", action="store_true", help="also check on the model (forced)")
    p.add_argument("--no-barriers", action="store_true",
                   help="no divergent-barrier programs (a machine without the fault detector does "
                   "not detect them)")
    args = p.parse_args(argv)
    machine = None
    if args.model:
        from qgpu.runtime.compiled import load_machine

        machine = load_machine()
    out = campaign(args.cases, args.seed, machine, barriers=not args.no_barriers)
    print(out)
    return 1 if out["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
