"""protocol.vocab: the launch vocabulary. Every token is (kind, argument); ids are laid
out kind after kind in the order of KINDS, value tokens first so that V(x) has id x.
docs/protocol.md's vocabulary table is generated from KINDS (tests check it).

Multi-field tokens pack their fields mixed-radix, first field most significant
(`pack`/`unpack`); e.g. EXEC(b, w, m, e) has argument
((b * MAX_WARPS + w) * 2^LANES + m) * EPOCHS + e.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.errors import TokenError
from qgpu.isa import limits
from qgpu.isa.faults import FAULT_KINDS
from qgpu.isa.ops import OPS

PROTOCOL_VERSION = 5    # 5: 128-block ROM: 7-bit block numbers, jump targets in a V token (no TGT)
#                        4: TRAP records (faults written by the model; ids after HALT)
#                        3: EXEC carries the barrier epoch (EXEC, R, END, HALT ids moved)
#                        2: mulhi.s/mulhi.u left the ISA (OPD ids and every later id moved)
# OP index i is the i-th mnemonic of OPS, local memory's ops left out: the model machine has
# no local memory (circuit.machine.spec refuses a program that has them)
OP_NAMES: tuple[str, ...] = tuple(op for op in OPS if OPS[op].space != "local")
TERMS = ("jmp", "br", "bar", "exit")
N_SLOTS = limits.STAGES * limits.SLOTS                     # instruction positions in a block
# Operand selector: register r read from the register file (0..REGS-1), the result of an
# earlier instruction of the same block at position p (REGS + p), or the immediate (last).
SEL_FWD = limits.REGS
SEL_IMM = limits.REGS + N_SLOTS
N_SEL = SEL_IMM + 1
IMM_FIELDS = ("a", "b", "c", "offset")          # IMM(b, p, j): operand j's immediate, or offset
MASKS = 1 << limits.LANES
EPOCHS = 4  # EXEC's barrier epoch: the CTA's barrier releases so far, mod 4


@dataclass(frozen=True)
class Kind:
    name: str
    fields: tuple[int, ...]   # radix of each field
    doc: str

    @property
    def count(self) -> int:
        n = 1
        for f in self.fields:
            n *= f
        return n


KINDS: tuple[Kind, ...] = (
    Kind("V", (1 << 16,), "V(x): a 16-bit value; V(x) has id x"),
    # prompt: launch configuration
    Kind("LAUNCH", (), "first prompt token"),
    Kind("GRID", (limits.MODEL_MAX_CTAS,), "GRID(g-1): g CTAs"),
    Kind("NTID", (limits.MODEL_MAX_THREADS_PER_CTA,), "NTID(n-1): n threads per CTA"),
    # prompt: program ROM, one record per row (fields of a row fit in the conv window)
    Kind("BLK", (limits.MODEL_ROM_BLOCKS,), "BLK(b) V(wb) TRM V(t | f << 8): block b's row record; "
                                      "V(wb): the writeback registers as a 16-bit mask; t, "
                                      "f: the jmp/bar/br target, br's other"),
    Kind("TRM", (len(TERMS), limits.REGS), "TRM(kind, cond): terminator kind, br's register"),
    Kind("INS", (limits.MODEL_ROM_BLOCKS, N_SLOTS),
         "INS(b, p): instruction p = stage*SLOTS+slot of "
                                          "block b: INS OPD SRCAB SRCC"),
    Kind("OPD", (len(OP_NAMES), limits.REGS), "OPD(op, dst): operation, destination (0: none)"),
    Kind("SRCAB", (N_SEL, N_SEL), "SRCAB(a, b): selectors of operands a and b"),
    Kind("SRCC", (N_SEL,), "SRCC(c): selector of operand c"),
    Kind("IMM", (limits.MODEL_ROM_BLOCKS, N_SLOTS, len(IMM_FIELDS)),
         "IMM(b, p, j) V(lo) V(hi): immediate j of instruction p of block b"),
    # prompt and trace: memory record
    Kind("ADDR", (limits.MODEL_FLAT_WORDS,),
         "ADDR(a) V(lo) V(hi): memory word a (flat) holds the value"),
    Kind("GO", (), "last prompt token; the model writes the trace from here"),
    # trace
    Kind("EXEC", (limits.MODEL_ROM_BLOCKS, limits.MODEL_MAX_WARPS, MASKS, EPOCHS),
         "EXEC(b, w, m, e): warp w runs block b with active lanes m; e: its CTA's barrier "
         "releases so far, mod 4"),
    Kind("R", (limits.REGS,), "R(r): the values of register r follow, V(lo) V(hi) per active "
                         "lane"),
    Kind("END", (MASKS,), "END(t): the block ends; t = active lanes that took a br"),
    Kind("HALT", (), "the launch has ended"),
    Kind("TRAP", (len(FAULT_KINDS), limits.LANES, N_SLOTS),
         "TRAP(kind, lane, p) V(lo) V(hi): the launch faults here (the last record): "
         "kind, the faulting lane and instruction position, the byte address"),
)

_BASE: dict[str, int] = {}
_n = 0
for _k in KINDS:
    _BASE[_k.name] = _n
    _n += _k.count
VOCAB_SIZE = _n
_BY_NAME = {k.name: k for k in KINDS}


def pack(kind: str, *fields: int) -> int:
    k = _BY_NAME[kind]
    if len(fields) != len(k.fields):
        raise ValueError(f"{kind} takes {len(k.fields)} fields, got {len(fields)}")
    arg = 0
    for value, radix in zip(fields, k.fields, strict=True):
        if not 0 <= value < radix:
            raise ValueError(f"{kind}{fields}: field value {value} out of range 0..{radix - 1}")
        arg = arg * radix + value
    return arg


def unpack(kind: str, arg: int) -> tuple[int, ...]:
    out = []
    for radix in reversed(_BY_NAME[kind].fields):
        arg, value = divmod(arg, radix)
        out.append(value)
    return tuple(reversed(out))


def tok(kind: str, *fields: int) -> int:
    """The id of token kind(fields...)."""
    return _BASE[kind] + pack(kind, *fields)


def kind_of(token: int) -> tuple[str, int]:
    """(kind, packed argument) of a token id."""
    if not 0 <= token < VOCAB_SIZE:
        raise TokenError(f"token id {token} outside the vocabulary (0..{VOCAB_SIZE - 1})")
    for k in reversed(KINDS):
        if token >= _BASE[k.name]:
            return k.name, token - _BASE[k.name]
    raise AssertionError("unreachable")


def fields_of(token: int) -> tuple[str, tuple[int, ...]]:
    kind, arg = kind_of(token)
    return kind, unpack(kind, arg)


def base(kind: str) -> int:
    return _BASE[kind]


def count(kind: str) -> int:
    return _BY_NAME[kind].count


def _mask(m: int) -> str:
    return "".join(str(lane) for lane in range(limits.LANES) if m >> lane & 1) or "-"


def _sel(s: int) -> str:
    if s < SEL_FWD:
        return f"r{s}"
    if s < SEL_IMM:
        return f"p{s - SEL_FWD}"
    return "imm"


def name(token: int) -> str:
    """Readable name: V(0x002a), EXEC(3,w1,0123), OPD(add,r4), ADDR(17), ..."""
    kind, f = fields_of(token)
    if kind == "V":
        return f"V(0x{f[0]:04x})"
    if kind == "EXEC":
        return f"EXEC({f[0]},w{f[1]},{_mask(f[2])}" + (f",e{f[3]})" if f[3] else ")")
    if kind in ("END",):
        return f"END({_mask(f[0])})"
    if kind == "OPD":
        return f"OPD({OP_NAMES[f[0]]},r{f[1]})"
    if kind == "TRM":
        return f"TRM({TERMS[f[0]]},r{f[1]})"
    if kind in ("SRCAB", "SRCC"):
        return f"{kind}({','.join(_sel(s) for s in f)})"
    if kind == "IMM":
        return f"IMM({f[0]},{f[1]},{IMM_FIELDS[f[2]]})"
    if kind in ("GRID", "NTID"):
        return f"{kind}({f[0] + 1})"
    if kind == "R":
        return f"R(r{f[0]})"
    if kind == "TRAP":
        return f"TRAP({FAULT_KINDS[f[0]]},lane{f[1]},p{f[2]})"
    if not f:
        return kind
    return f"{kind}({','.join(str(x) for x in f)})"


def split32(value: int) -> tuple[int, int]:
    """The two value tokens (lo, hi) of a 32-bit word."""
    value = limits.u32(value)
    return tok("V", value & 0xFFFF), tok("V", value >> 16)
