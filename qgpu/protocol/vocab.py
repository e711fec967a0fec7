"""protocol.vocab: the launch vocabulary. Every token is (kind, argument); ids are laid
out kind after kind in the order of KINDS, value tokens first so that V(x) has id x.
docs/protocol.md's vocabulary table is generated from KINDS (tests check it)."""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.isa import machine as M
from qgpu.isa.ops import OPS

PROTOCOL_VERSION = 0
OP_NAMES: tuple[str, ...] = tuple(OPS)          # OP(i) is the i-th mnemonic of OPS
TERMS = ("jmp", "br", "bar", "exit")


@dataclass(frozen=True)
class Kind:
    name: str
    count: int          # number of ids of this kind
    doc: str


KINDS: tuple[Kind, ...] = (
    Kind("V", 1 << 16, "a 16-bit value, V(x) has id x (register and memory halves, "
                       "immediates)"),
    Kind("LAUNCH", 1, "first prompt token"),
    Kind("GRID", M.MAX_CTAS, "GRID(g): g CTAs, g = 1.."),
    Kind("NTID", M.MAX_THREADS_PER_CTA, "NTID(n): n threads per CTA, n = 1.."),
    Kind("BLOCK", M.ROM_BLOCKS, "BLOCK(b): program ROM block b follows"),
    Kind("WB", M.REGS, "WB(r): register r is in the block's writeback set"),
    Kind("SLOT", M.STAGES * M.SLOTS, "SLOT(s*SLOTS+k): the instruction of stage s, slot k"),
    Kind("OP", len(OP_NAMES), "OP(i): operation OP_NAMES[i]"),
    Kind("DST", M.REGS, "DST(r): destination register"),
    Kind("SRC", M.REGS, "SRC(r): register source operand (also br's condition)"),
    Kind("IMM", 1, "immediate source operand: IMM V(lo) V(hi)"),
    Kind("OFF", 1, "address offset of a memory operation: OFF V(lo) V(hi)"),
    Kind("TERM", len(TERMS), "TERM(i): terminator TERMS[i]; then its SRC / TGT tokens"),
    Kind("TGT", M.ROM_BLOCKS, "TGT(b): a branch target block"),
    Kind("ADDR", M.FLAT_WORDS, "ADDR(a): memory record for flat word a: ADDR V(lo) V(hi)"),
    Kind("GO", 1, "last prompt token; the model writes the trace from here"),
    Kind("EXEC", M.ROM_BLOCKS * M.MAX_WARPS, "EXEC(b*MAX_WARPS+w): warp w executes block b"),
    Kind("TAKEN", 1 << M.LANES, "TAKEN(m): after a br block, lanes in mask m took it"),
    Kind("HALT", 1, "the launch has ended"),
)

_BASE: dict[str, int] = {}
_n = 0
for _k in KINDS:
    _BASE[_k.name] = _n
    _n += _k.count
VOCAB_SIZE = _n
_BY_NAME = {k.name: k for k in KINDS}


def tok(kind: str, arg: int = 0) -> int:
    """The id of token kind(arg)."""
    k = _BY_NAME[kind]
    if not 0 <= arg < k.count:
        raise ValueError(f"{kind}({arg}) out of range 0..{k.count - 1}")
    return _BASE[kind] + arg


def kind_of(token: int) -> tuple[str, int]:
    """(kind, argument) of a token id."""
    if not 0 <= token < VOCAB_SIZE:
        raise ValueError(f"token id {token} outside the vocabulary (0..{VOCAB_SIZE - 1})")
    for k in reversed(KINDS):
        if token >= _BASE[k.name]:
            return k.name, token - _BASE[k.name]
    raise AssertionError("unreachable")


def base(kind: str) -> int:
    return _BASE[kind]


def exec_token(block: int, warp: int) -> int:
    return tok("EXEC", block * M.MAX_WARPS + warp)


def name(token: int) -> str:
    """Readable name: V(0x002a), EXEC(3,w1), OP(add), ADDR(17), ..."""
    kind, arg = kind_of(token)
    if kind == "V":
        return f"V(0x{arg:04x})"
    if kind == "EXEC":
        return f"EXEC({arg // M.MAX_WARPS},w{arg % M.MAX_WARPS})"
    if kind == "OP":
        return f"OP({OP_NAMES[arg]})"
    if kind == "TERM":
        return f"TERM({TERMS[arg]})"
    if kind == "TAKEN":
        return f"TAKEN({arg:0{M.LANES}b})"
    if kind in ("GRID", "NTID"):
        return f"{kind}({arg + 1})"
    if _BY_NAME[kind].count == 1:
        return kind
    return f"{kind}({arg})"


def split32(value: int) -> tuple[int, int]:
    """The two value tokens (lo, hi) of a 32-bit word."""
    value = M.u32(value)
    return tok("V", value & 0xFFFF), tok("V", value >> 16)
