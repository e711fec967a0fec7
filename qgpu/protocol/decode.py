"""protocol.decode: token streams back into readable records. `decode_prompt` rebuilds
the launch (program, grid, block, memory) from a prompt; `decode_trace` walks a trace
with the protocol's own bookkeeping (lane PCs, barriers: no kernel arithmetic), checks
every record against it, and attributes each value token to its register and lane. A
stream that breaks the protocol is a ProtocolError naming the position."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from qgpu.errors import ProtocolError
from qgpu.isa import limits
from qgpu.isa.faults import FAULT_KINDS, Trap, fault_message
from qgpu.isa.ops import OPS
from qgpu.isa.program import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg
from qgpu.protocol.prompt import operand_selectors
from qgpu.protocol.vocab import (
    EPOCHS,
    IMM_FIELDS,
    OP_NAMES,
    SEL_FWD,
    SEL_IMM,
    TERMS,
    fields_of,
    name,
)

MEMORY_KINDS = ("load", "store", "atomic")


@dataclass
class Launch:
    program: Program
    grid: int
    block: int
    memory: list[int]


class _Reader:
    def __init__(self, tokens: list[int], what: str):
        self.toks, self.pos, self.what = list(tokens), 0, what
        for i, t in enumerate(self.toks):
            if isinstance(t, bool) or not isinstance(t, int | np.integer):
                raise ProtocolError(f"{what}: position {i}: {t!r} is not a token id")

    def peek(self) -> str | None:
        return fields_of(self.toks[self.pos])[0] if self.pos < len(self.toks) else None

    def take(self, *kinds: str) -> tuple[int, ...]:
        if self.pos >= len(self.toks):
            raise ProtocolError(f"{self.what}: stream ends at position {self.pos}, "
                                f"expected {' or '.join(kinds)}")
        kind, f = fields_of(self.toks[self.pos])
        if kinds and kind not in kinds:
            raise ProtocolError(f"{self.what}: position {self.pos}: expected "
                                f"{' or '.join(kinds)}, found {name(self.toks[self.pos])}")
        self.pos += 1
        return f

    def word(self) -> int:
        lo = self.take("V")[0]
        return lo | (self.take("V")[0] << 16)


def _block_row(r: _Reader) -> tuple[int, frozenset[int], object]:
    b = r.take("BLK")[0]
    wb = r.take("V")[0]
    kind, cond = r.take("TRM")
    targets = r.take("V")[0]
    t, f = targets & (limits.MODEL_ROM_BLOCKS - 1), targets >> limits.MODEL_BLOCK_BITS
    term = {"jmp": Jmp(t), "br": Br(Reg(cond), t, f), "bar": Bar(t), "exit": Exit()}[
        TERMS[kind]]
    return b, frozenset(x for x in range(limits.REGS) if wb >> x & 1), term


def _instruction(r: _Reader, b: int, written: dict[int, int]) -> tuple[int, Instr, tuple]:
    start = r.pos
    bb, p = r.take("INS")
    if bb != b:
        raise ProtocolError(f"prompt: position {start}: INS of block {bb} inside block {b}")
    op_i, dst = r.take("OPD")
    sels = (*r.take("SRCAB"), *r.take("SRCC"))
    spec = OPS[OP_NAMES[op_i]]
    imms = {}
    while r.peek() == "IMM":
        at = r.pos
        ib, ip, j = r.take("IMM")
        if (ib, ip) != (b, p):
            raise ProtocolError(f"prompt: position {at}: IMM of instruction ({ib}, {ip}) "
                                f"after INS({b}, {p})")
        imms[j] = r.word()
    srcs = []
    for j in range(spec.n_srcs):
        s = sels[j]
        if s == SEL_IMM:
            srcs.append(Imm(imms.get(j, 0)))
        elif s >= SEL_FWD:
            srcs.append(Reg(written.get(s - SEL_FWD, 0)))   # the forwarding writer's dst
        else:
            srcs.append(Reg(s))
    ins = Instr(spec.mnemonic, dst if spec.has_dst else None, tuple(srcs),
                imms.get(IMM_FIELDS.index("offset"), 0))
    return p, ins, sels[:spec.n_srcs]


def decode_prompt(tokens: list[int]) -> Launch:
    r = _Reader(tokens, "prompt")
    r.take("LAUNCH")
    grid = r.take("GRID")[0] + 1
    ntid = r.take("NTID")[0] + 1
    blocks: list[Block] = []
    memory = [0] * limits.MODEL_GLOBAL_WORDS
    while r.peek() == "BLK":
        start = r.pos
        b, wb, term = _block_row(r)
        if b != len(blocks):
            raise ProtocolError(f"prompt: position {start}: block {b} out of order")
        stages: list[list[Instr]] = []
        written: dict[int, int] = {}
        sels_seen = {}
        while r.peek() == "INS":
            p, ins, sels = _instruction(r, b, written)
            s, k = divmod(p, limits.SLOTS)
            while len(stages) <= s:
                stages.append([])
            if k != len(stages[s]):
                raise ProtocolError(f"prompt: block {b}: instruction {p} out of order")
            stages[s].append(ins)
            written[p] = ins.dst or 0
            sels_seen[p] = sels
        blk = Block(stages, term, wb)
        if operand_selectors(blk) != sels_seen:
            raise ProtocolError(f"prompt: block {b}: operand selectors do not match the "
                                f"block's registers")
        blocks.append(blk)
    while r.peek() == "ADDR":
        at = r.pos
        a = r.take("ADDR")[0]
        if a >= limits.MODEL_GLOBAL_WORDS:
            raise ProtocolError(f"prompt: position {at}: ADDR({a}) is not a global word "
                                f"(0..{limits.MODEL_GLOBAL_WORDS - 1}); the prompt sets global "
                                f"memory")
        memory[a] = r.word()
    r.take("GO")
    if r.pos != len(r.toks):
        raise ProtocolError(f"prompt: tokens after GO at position {r.pos}")
    return Launch(Program(blocks, "decoded"), grid, ntid, memory)


@dataclass
class Record:
    position: int                       # index of the record's first token in the trace
    kind: str                           # "exec" | "halt" | "trap" (a fault: the last record)
    block: int = -1
    warp: int = -1
    active: tuple[int, ...] = ()
    registers: dict[int, dict[int, int]] = field(default_factory=dict)   # reg -> lane -> value
    mem_writes: list[tuple[int, int]] = field(default_factory=list)
    taken: tuple[int, ...] = ()
    trap: Trap | None = None

    def __str__(self) -> str:
        if self.kind == "halt":
            return f"{self.position:5d}  HALT"
        if self.kind == "trap":
            message = fault_message(self.trap, limits.MODEL_MEMORY)
            return f"{self.position:5d}  TRAP {self.trap.kind}: {message}"
        parts = [f"{self.position:5d}  EXEC block {self.block} warp {self.warp} "
                 f"lanes {''.join(str(x) for x in self.active)}"]
        for reg, lanes in self.registers.items():
            vals = " ".join(f"{limits.s32(v)}" for v in lanes.values())
            parts.append(f"r{reg}=[{vals}]")
        for a, v in self.mem_writes:
            parts.append(f"mem[{a}]={limits.s32(v)}")
        if self.taken:
            parts.append(f"taken {''.join(str(x) for x in self.taken)}")
        return "  ".join(parts)


class _Lanes:
    """Lane PCs and statuses, updated from the trace's records alone (docs/isa.md)."""

    def __init__(self, launch: Launch):
        self.per_cta = limits.warps_per_cta(launch.block)
        self.nwarps = launch.grid * self.per_cta
        self.pc = [[0] * limits.LANES for _ in range(self.nwarps)]
        self.status = [["run" if (w % self.per_cta) * limits.LANES + ln < launch.block
                        else "absent" for ln in range(limits.LANES)] for w in range(self.nwarps)]
        self.releases = [0] * launch.grid  # barrier releases per CTA (EXEC's epoch)
        self.diverged: tuple[int, int] | None = None   # (CTA, TRAP address) of a fault

    def next_exec(self) -> tuple[int, int, tuple[int, ...], int] | None:
        for w in range(self.nwarps):
            running = [ln for ln in range(limits.LANES) if self.status[w][ln] == "run"]
            if running:
                b = min(self.pc[w][ln] for ln in running)
                return (b, w, tuple(ln for ln in running if self.pc[w][ln] == b),
                        self.releases[w // self.per_cta] % EPOCHS)
        return None

    def finish(self, w: int, active, term, taken) -> None:
        for ln in active:
            if isinstance(term, Jmp | Bar):
                self.pc[w][ln] = term.target
                self.status[w][ln] = "wait" if isinstance(term, Bar) else "run"
            elif isinstance(term, Br):
                self.pc[w][ln] = term.taken if ln in taken else term.not_taken
            else:
                self.status[w][ln] = "exit"
        cta = w // self.per_cta
        lanes = [(x, ln) for x in range(cta * self.per_cta, (cta + 1) * self.per_cta)
                 for ln in range(limits.LANES)]
        if not any(self.status[x][ln] == "run" for x, ln in lanes):
            waiting = [(x, ln) for x, ln in lanes if self.status[x][ln] == "wait"]
            targets = {self.pc[x][ln] for x, ln in waiting}
            if len(targets) > 1:                    # a barrier fault: TRAP comes next
                self.diverged = (cta, min(targets) | max(targets) << 16)
                return
            for x, ln in waiting:
                self.status[x][ln] = "run"
            if waiting:
                self.releases[cta] += 1


def _lanes_of(mask: int) -> tuple[int, ...]:
    return tuple(ln for ln in range(limits.LANES) if mask >> ln & 1)


def decode_trace(launch: Launch, tokens: list[int]) -> list[Record]:
    """Records of a trace; checks each EXEC against the machine's schedule."""
    return list(iter_trace(launch, tokens))


def iter_trace(launch: Launch, tokens: list[int]) -> Iterator[Record]:
    """decode_trace's records one at a time, as they are decoded (`qgpu trace` prints
    each before the next is read: a long trace's first lines come at once)."""
    prog = launch.program
    lanes = _Lanes(launch)
    r = _Reader(tokens, "trace")
    while True:
        start = r.pos
        want = lanes.next_exec()
        if r.peek() == "HALT":
            if want is not None:
                raise ProtocolError(f"trace: position {start}: HALT while warp {want[1]} "
                                    f"can still run block {want[0]}")
            r.take("HALT")
            if r.pos != len(r.toks):
                raise ProtocolError(f"trace: tokens after HALT at position {r.pos}")
            yield Record(start, "halt")
            return
        b, w, m, e = r.take("EXEC")
        if want is None or (b, w, _lanes_of(m), e) != want:
            raise ProtocolError(f"trace: position {start}: {name(tokens[start])}, but the "
                                f"machine schedules " + (
                                    f"block {want[0]} for warp {want[1]} lanes "
                                    f"{''.join(map(str, want[2]))} (barrier epoch "
                                    f"{want[3]})" if want else "HALT"))
        active = want[2]
        blk = prog.blocks[b]
        if r.peek() == "TRAP":
            yield _memory_trap(r, launch, lanes, b, w, active)
            return
        rec = Record(start, "exec", b, w, active)
        for reg in sorted(blk.writeback):
            got = r.take("R")[0]
            if got != reg:
                raise ProtocolError(f"trace: position {r.pos - 1}: R(r{got}), but block {b} "
                                    f"writes back r{reg} next")
            rec.registers[reg] = {ln: r.word() for ln in active}
        while r.peek() == "ADDR":
            a = r.take("ADDR")[0]
            rec.mem_writes.append((a, r.word()))
        rec.taken = _lanes_of(r.take("END")[0])
        if not set(rec.taken) <= set(active) or (
                rec.taken and not isinstance(blk.terminator, Br)):
            raise ProtocolError(f"trace: position {r.pos - 1}: END names lanes that did "
                                f"not take a branch")
        lanes.finish(w, active, blk.terminator, rec.taken)
        yield rec
        if lanes.diverged is not None:
            yield _barrier_trap(r, lanes, b, w)
            return


def _trap_fields(r: _Reader) -> tuple[int, str, int, int, int]:
    at = r.pos
    kind_i, lane, p = r.take("TRAP")
    address = r.word()
    if r.pos != len(r.toks):
        raise ProtocolError(f"trace: tokens after the TRAP record at position {r.pos}")
    return at, FAULT_KINDS[kind_i], lane, p, address


def _memory_trap(r: _Reader, launch: Launch, lanes: _Lanes, b: int, w: int,
                 active) -> Record:
    """EXEC(b, w, m, e) TRAP(kind, lane, p) V V: block b faulted at instruction p."""
    at, kind, lane, p, address = _trap_fields(r)
    stages = launch.program.blocks[b].stages
    s, k = divmod(p, limits.SLOTS)
    ins = stages[s][k] if s < len(stages) and k < len(stages[s]) else None
    space = ins.spec.space if ins is not None and ins.spec.kind in MEMORY_KINDS else None
    if kind == "barrier" or space is None or not kind.endswith(space) or lane not in active:
        raise ProtocolError(f"trace: position {at}: {name(r.toks[at])} does not name a "
                            f"{'memory operation' if space is None else space + ' access'} "
                            f"of an active lane of block {b}")
    trap = Trap(kind, address, w, lane, b, p, w // lanes.per_cta, ins.op)
    return Record(at, "trap", b, w, tuple(active), trap=trap)


def _barrier_trap(r: _Reader, lanes: _Lanes, b: int, w: int) -> Record:
    """... END TRAP(barrier, 0, 0) V V: the CTA's lanes wait at different barriers."""
    cta, address = lanes.diverged
    start = r.pos
    if r.peek() != "TRAP":
        raise ProtocolError(f"trace: position {start}: lanes of CTA {cta} wait at "
                            f"different barriers, so a TRAP record must follow")
    at, kind, lane, p, got = _trap_fields(r)
    if (kind, lane, p, got) != ("barrier", 0, 0, address):
        raise ProtocolError(f"trace: position {at}: {name(r.toks[at])} with address {got}; "
                            f"the barrier fault is TRAP(barrier,lane0,p0) with {address}")
    return Record(at, "trap", b, w, trap=Trap("barrier", address, w, 0, b, 0, cta))
