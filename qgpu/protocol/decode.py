"""protocol.decode: token streams back into readable records. `decode_prompt` rebuilds
the launch (program, grid, block, memory) from a prompt; `decode_trace` walks a trace
with the protocol's own bookkeeping (lane PCs, barriers: no kernel arithmetic) so that
every value token is attributed to its register and lane, and a stream that breaks the
protocol is a ProtocolError naming the position."""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import ProtocolError
from qgpu.isa import machine as M
from qgpu.isa.ops import OPS
from qgpu.isa.program import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg
from qgpu.protocol.vocab import OP_NAMES, TERMS, kind_of, name


@dataclass
class Launch:
    program: Program
    grid: int
    block: int
    memory: list[int]


class _Reader:
    def __init__(self, tokens: list[int], what: str):
        self.toks, self.pos, self.what = list(tokens), 0, what

    def peek(self) -> tuple[str, int] | None:
        return kind_of(self.toks[self.pos]) if self.pos < len(self.toks) else None

    def take(self, *kinds: str) -> tuple[str, int]:
        if self.pos >= len(self.toks):
            raise ProtocolError(f"{self.what}: stream ends at position {self.pos}, "
                                f"expected {' or '.join(kinds)}")
        k = kind_of(self.toks[self.pos])
        if kinds and k[0] not in kinds:
            raise ProtocolError(f"{self.what}: position {self.pos}: expected "
                                f"{' or '.join(kinds)}, found {name(self.toks[self.pos])}")
        self.pos += 1
        return k

    def word(self) -> int:
        lo = self.take("V")[1]
        return lo | (self.take("V")[1] << 16)


def decode_prompt(tokens: list[int]) -> Launch:
    r = _Reader(tokens, "prompt")
    r.take("LAUNCH")
    grid = r.take("GRID")[1] + 1
    ntid = r.take("NTID")[1] + 1
    blocks: list[Block] = []
    memory = [0] * M.GLOBAL_WORDS
    while r.peek() and r.peek()[0] == "BLOCK":
        b = r.take("BLOCK")[1]
        if b != len(blocks):
            raise ProtocolError(f"prompt: position {r.pos - 1}: block {b} out of order")
        wb = set()
        while r.peek() and r.peek()[0] == "WB":
            wb.add(r.take("WB")[1])
        stages: list[list[Instr]] = []
        while r.peek() and r.peek()[0] == "SLOT":
            slot = r.take("SLOT")[1]
            op = OP_NAMES[r.take("OP")[1]]
            spec = OPS[op]
            dst = r.take("DST")[1] if spec.has_dst else None
            srcs = []
            for _ in range(spec.n_srcs):
                k = r.take("SRC", "IMM")
                srcs.append(Reg(k[1]) if k[0] == "SRC" else Imm(r.word()))
            offset = 0
            if r.peek() and r.peek()[0] == "OFF":
                r.take("OFF")
                offset = r.word()
            s = slot // M.SLOTS
            while len(stages) <= s:
                stages.append([])
            stages[s].append(Instr(op, dst, tuple(srcs), offset))
        term_name = TERMS[r.take("TERM")[1]]
        if term_name == "jmp":
            term = Jmp(r.take("TGT")[1])
        elif term_name == "br":
            cond = Reg(r.take("SRC")[1])
            term = Br(cond, r.take("TGT")[1], r.take("TGT")[1])
        elif term_name == "bar":
            term = Bar(r.take("TGT")[1])
        else:
            term = Exit()
        blocks.append(Block(stages, term, frozenset(wb)))
    while r.peek() and r.peek()[0] == "ADDR":
        a = r.take("ADDR")[1]
        memory[a] = r.word()
    r.take("GO")
    if r.pos != len(r.toks):
        raise ProtocolError(f"prompt: tokens after GO at position {r.pos}")
    return Launch(Program(blocks, "decoded"), grid, ntid, memory)


@dataclass
class Record:
    position: int                       # index of the record's first token in the trace
    kind: str                           # "exec" | "halt"
    block: int = -1
    warp: int = -1
    active: tuple[int, ...] = ()
    registers: dict[int, dict[int, int]] = field(default_factory=dict)   # reg -> lane -> value
    mem_writes: list[tuple[int, int]] = field(default_factory=list)
    taken: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if self.kind == "halt":
            return f"{self.position:5d}  HALT"
        parts = [f"{self.position:5d}  EXEC block {self.block} warp {self.warp} "
                 f"lanes {''.join(str(x) for x in self.active)}"]
        for reg, lanes in self.registers.items():
            vals = " ".join(f"{M.s32(v)}" for v in lanes.values())
            parts.append(f"r{reg}=[{vals}]")
        for a, v in self.mem_writes:
            parts.append(f"mem[{a}]={M.s32(v)}")
        if self.taken is not None:
            parts.append(f"taken {''.join(str(x) for x in self.taken) or '-'}")
        return "  ".join(parts)


def decode_trace(launch: Launch, tokens: list[int]) -> list[Record]:
    """Records of a trace. Tracks lane PCs the way the machine schedules (docs/isa.md)."""
    prog = launch.program
    per_cta = -(-launch.block // M.LANES)
    nwarps = launch.grid * per_cta
    pc = [[0] * M.LANES for _ in range(nwarps)]
    status = [["run" if (w % per_cta) * M.LANES + lane < launch.block else "absent"
               for lane in range(M.LANES)] for w in range(nwarps)]
    r = _Reader(tokens, "trace")
    out: list[Record] = []
    while True:
        start = r.pos
        k, arg = r.take("EXEC", "HALT")
        if k == "HALT":
            out.append(Record(start, "halt"))
            if r.pos != len(r.toks):
                raise ProtocolError(f"trace: tokens after HALT at position {r.pos}")
            return out
        b, w = divmod(arg, M.MAX_WARPS)
        if w >= nwarps or b >= len(prog.blocks):
            raise ProtocolError(f"trace: position {start}: {name(tokens[start])} names a "
                                f"warp or block the launch does not have")
        running = [ln for ln in range(M.LANES) if status[w][ln] == "run"]
        if not running or min(pc[w][ln] for ln in running) != b:
            raise ProtocolError(f"trace: position {start}: warp {w} cannot run block {b} now")
        active = tuple(ln for ln in running if pc[w][ln] == b)
        blk = prog.blocks[b]
        rec = Record(start, "exec", b, w, active)
        for reg in sorted(blk.writeback):
            rec.registers[reg] = {ln: r.word() for ln in active}
        while r.peek() and r.peek()[0] == "ADDR":
            a = r.take("ADDR")[1]
            rec.mem_writes.append((a, r.word()))
        term = blk.terminator
        if isinstance(term, Br):
            mask = r.take("TAKEN")[1]
            rec.taken = tuple(ln for ln in active if mask >> ln & 1)
        for ln in active:
            if isinstance(term, Jmp | Bar):
                pc[w][ln] = term.target
                status[w][ln] = "wait" if isinstance(term, Bar) else "run"
            elif isinstance(term, Br):
                pc[w][ln] = term.taken if ln in rec.taken else term.not_taken
            else:
                status[w][ln] = "exit"
        cta = w // per_cta
        lanes = [(x, ln) for x in range(cta * per_cta, (cta + 1) * per_cta)
                 for ln in range(M.LANES)]
        if not any(status[x][ln] == "run" for x, ln in lanes):
            for x, ln in lanes:
                if status[x][ln] == "wait":
                    status[x][ln] = "run"
        out.append(rec)
