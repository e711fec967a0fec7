"""machine.build: the whole machine circuit from a `MachineSpec`, and its compilation for
a layer shape (cached on disk by the compiler; progress on stderr).

    compiled = compile_machine(LayerShape.qwen35_2b(), MachineSpec(slots=1), progress=True)
    compiled.weights   # FastEngine(compiled.weights) runs launches (qgpu.runtime)

Output rules (the token the model writes after each trace position): V(value) while an R
record has values left; R(next writeback register) or END(t) at EXEC and at a record's
last value; EXEC(b, w, m, e) or HALT at GO and END; TRAP(kind, lane, p) at an EXEC
whose block faults, then the address's V(lo) V(hi) (machine.faults). Prompt positions
fall to the default (LAUNCH), which the host never reads.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from qgpu.circuit.compile import Compiled, compile_circuit
from qgpu.circuit.ir import Circuit
from qgpu.circuit.machine import atomics, faults, minmax, multiply, shared, shift, warp
from qgpu.circuit.machine.alu import alu_high, alu_low, operands, shared_base
from qgpu.circuit.machine.bookkeeping import LANES, TokenTable, bookkeeping, value_slots
from qgpu.circuit.machine.emission import emission
from qgpu.circuit.machine.families import Builder, StageView
from qgpu.circuit.machine.memory import MemoryTables, store_records
from qgpu.circuit.machine.registers import RegisterFile
from qgpu.circuit.machine.rom import block_row, immediates, rom
from qgpu.circuit.machine.schedule_pcs import scheduler
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.outputs import default_token, output_member, output_token, output_value
from qgpu.circuit.schedule import LayerShape
from qgpu.isa.faults import FAULT_KINDS
from qgpu.protocol.vocab import VOCAB_SIZE, base, count, tok

# every operation family's builder, in the order their steps join the ALU's high MLP
FAMILIES: list[Builder] = [multiply.build, shared.build, atomics.build, shift.build,
                           minmax.build, warp.build]


def _source_digest() -> str:
    """The machine's own sources (the compiler's cache key covers qgpu/circuit/*.py and
    qgpu/primitives/*.py only)."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


# the narrowest plan within 44 layers: hidden 2,015 with the 128-block ROM (43 layers give
# 2,194; the 32-block ROM had 43 and 2,009; benchmarks/machine_width.py --curve)
MAX_LAYERS = 44
# with the fault detector (MachineSpec.detect_faults, machine.faults): the seed's 45
# (44 layers, hidden 2,156 with the 128-block ROM)
MAX_LAYERS_DETECTING = 45


def max_layers(spec: MachineSpec) -> int:
    return MAX_LAYERS_DETECTING if spec.detect_faults else MAX_LAYERS


def build_machine(spec: MachineSpec | None = None) -> Circuit:
    spec = spec or MachineSpec()
    subset = ""
    if spec.ops is not None:
        subset = "_ops" + hashlib.sha256(" ".join(spec.ops).encode()).hexdigest()[:8]
    traps = "_traps" if spec.detect_faults else ""
    c = Circuit(f"qgpu_machine_s{spec.slots}{subset}{traps}_{_source_digest()}", VOCAB_SIZE)
    tt = TokenTable(c)
    bk = bookkeeping(c, tt, traps=spec.detect_faults)
    value_next, value_done = value_slots(c, bk)
    fetch, ins, fetch_after = rom(c, tt, bk, spec), [], []
    block = block_row(c, tt, bk)
    rf = RegisterFile(c, bk)
    memory = MemoryTables(c, tt, bk)
    results, ready, operand_b, all_words, records = {}, [], {}, {}, {}
    shared: dict = {"tt": tt, "memory": memory}  # StageView.extra: machine parts families use
    detector = faults.Detector({}, None)  # machine.faults: TRAP records
    for k in range(spec.stages):
        stage = [fetch(p, fetch_after) for p in spec.positions if spec.stage_of(p) == k]
        ins += stage
        regs = rf.stage_reads(k, stage, ready)
        for i in stage:
            immediates(c, tt, bk, i, ready)
        pending, words = [], {}
        for i in stage:
            opnds, lows, sources = {}, {}, {}
            cta_base = shared_base(c, i, bk)
            for lane in range(LANES):
                earlier = [results[(q, lane)] for q in spec.earlier(i.position)]
                sources[lane] = earlier
                opnds[lane] = operands(c, i, lane, [regs[(i.position, j, lane)]
                                                    for j in range(3)], earlier)
                lows[lane], words[(i.position, lane)] = alu_low(c, i, lane, opnds[lane], cta_base)
                operand_b[(i.position, lane)] = opnds[lane][32:64]
            if spec.detect_faults:
                faults.stage(c, bk, i, opnds, {ln: regs[(i.position, 0, ln)]
                                               for ln in range(LANES)}, sources, detector)
            pending.append((i, opnds, lows))
        loaded = memory.loads(k, words)
        all_words.update(words)
        for i, opnds, lows in pending:
            view = StageView(c, bk, i, opnds, lows,
                             {lane: words[(i.position, lane)] for lane in range(LANES)},
                             {lane: loaded[(i.position, lane)] for lane in range(LANES)},
                             shared)
            for lane in range(LANES):
                exts = [e for e in (family(view, lane) for family in FAMILIES) if e is not None]
                results[(i.position, lane)] = alu_high(c, i, lane, opnds[lane], lows[lane], bk,
                                                       loaded[(i.position, lane)], exts)
        # machine.atomics: per (position, lane) a maker of the word after the lane's
        # atomic (made after the lane's result, so that it stays out of alu_high's MLP)
        atomic = shared.get("record_values", {})
        after = []
        for i, _, _ in pending:
            news = ([atomic[(i.position, lane)](results[(i.position, lane)])
                     for lane in range(LANES)] if (i.position, 0) in atomic else None)
            after += news or []
            records[i.position] = store_records(
                c, bk, i, [all_words[(i.position, lane)] for lane in range(LANES)],
                [operand_b[(i.position, lane)] for lane in range(LANES)], news)
        # stage k + 1's fetch waits for stage k's register reads; its reads for stage k's results
        # and atomics' record values
        fetch_after = list(regs.values())
        ready = [*(results[(i.position, lane)] for i, _, _ in pending for lane in range(LANES)),
                 *after]
        if k == 0:
            first_done = ready
    conds = rf.condition_reads(block, first_done)  # the block's start value
    records = [records[i.position] for i in ins]
    trap = faults.emit(c, bk, detector)
    # with the detector, the scheduler comes first: its barrier detector feeds the emission
    # (machine.barriers); without, the old order keeps the narrow machine's plan
    sch = scheduler(c, bk, block, traps=True) if spec.detect_faults else None
    em = emission(c, bk, ins, block, results, conds, value_next, value_done, records,
                  detector.addrs, trap, sch.barrier if sch else None)
    sch = sch or scheduler(c, bk, block)
    output_value(c, em.value, list(range(1 << 16)), when=em.emit_value)
    output_member(c, em.next_reg, [tok("R", r) for r in range(16)], when=em.emit_r)
    output_value(c, em.addr, [tok("ADDR", a) for a in range(1 << len(em.addr))],
                 when=em.emit_addr)
    output_member(c, em.taken_onehot, [tok("END", t) for t in range(1 << LANES)],
                  when=em.emit_end)
    output_value(c, sch.next_exec, list(range(base("EXEC"), base("EXEC") + count("EXEC"))),
                 when=sch.emit_exec)
    output_token(c, tok("HALT"), when=sch.halt)
    if trap is not None:  # TRAP(kind, lane, p): the 6 field bits p | lane | kind (memory)
        output_value(c, detector.summary[1:1 + faults.FIELD_BITS],
                     [tok("TRAP", v >> 4, v >> 2 & 3, v & 3) for v in range(64)], when=trap)
    if sch.barrier is not None:  # machine.barriers: lanes wait at different barriers
        output_token(c, tok("TRAP", FAULT_KINDS.index("barrier"), 0, 0), when=sch.barrier.trap)
    default_token(c, tok("LAUNCH"))
    return c


def compile_machine(shape: LayerShape | None = None, spec: MachineSpec | None = None, *,
                    cache: bool | str | Path = True, progress: bool = False) -> Compiled:
    shape = shape or LayerShape.qwen35_2b()
    spec = spec or MachineSpec()
    return compile_circuit(build_machine(spec), shape, max_layers=max_layers(spec), cache=cache,
                           progress=progress)
