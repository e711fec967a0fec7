"""isa.asm: the machine's assembly text format (assembler and disassembler; the round
trip is exact).

    .kernel dot                      # optional program name
    block 0:                         # blocks are numbered in order from 0
      tid r1 ; shl r2, r1, 2         # one line per stage; ';' separates its operations
      ld.global r3, [r2] ; ld.global r4, [r2+16]
      mul r5, r3, r4
      .writeback r5                  # optional; otherwise computed by liveness
      br r1, 1, 2                    # terminator: jmp T | br rC, T, F | bar T | bar.group T | exit
Operands are registers r0..r15, integers (decimal or 0x hex, negative allowed), and for
memory operations an address [rN], [rN+imm], [rN-imm] or [imm]. '#' starts a comment.
"""

from __future__ import annotations

import re

from qgpu.errors import AssemblyError, ProgramError
from qgpu.isa.limits import s32
from qgpu.isa.ops import OPS
from qgpu.isa.program import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg

_BLOCK = re.compile(r"^block\s+(\d+)\s*:$")
_NUM = r"(?:0x[0-9a-fA-F]+|\d+)"
_ADDR = re.compile(rf"^\[\s*(r\d+|[-+]?{_NUM})\s*(?:([+-])\s*({_NUM}))?\s*\]$")


def _int(text: str, line: int) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AssemblyError(f"line {line}: '{text}' is not an integer") from None


def _operand(text: str, line: int):
    text = text.strip()
    if re.fullmatch(r"r\d+", text):
        return Reg(int(text[1:]))
    return Imm(_int(text, line))


def _split_operands(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _address(text: str, line: int) -> tuple[object, int]:
    m = _ADDR.match(text.strip())
    if not m:
        raise AssemblyError(f"line {line}: bad address '{text}' (expected [rN+imm])")
    base = _operand(m.group(1), line)
    off = _int(m.group(3), line) if m.group(3) else 0
    return base, (-off if m.group(2) == "-" else off)


def _instr(text: str, line: int) -> Instr:
    head, _, rest = text.strip().partition(" ")
    spec = OPS.get(head)
    if spec is None:
        raise AssemblyError(f"line {line}: unknown operation '{head}'")
    ops = _split_operands(rest)
    dst = None
    if spec.has_dst:
        if not ops or not re.fullmatch(r"r\d+", ops[0]):
            raise AssemblyError(f"line {line}: {head} needs a destination register")
        dst = int(ops.pop(0)[1:])
    offset = 0
    srcs: list = []
    for k, o in enumerate(ops):
        if spec.kind in ("load", "store", "atomic") and k == 0:
            base, offset = _address(o, line)
            srcs.append(base)
        else:
            srcs.append(_operand(o, line))
    if len(srcs) != spec.n_srcs:
        raise AssemblyError(f"line {line}: {head} takes {spec.n_srcs} source operands, "
                            f"got {len(srcs)}")
    return Instr(head, dst, tuple(srcs), offset)


def _terminator(text: str, line: int):
    head, _, rest = text.partition(" ")
    args = _split_operands(rest)
    try:
        if head == "exit" and not args:
            return Exit()
        if head in ("jmp", "bar") and len(args) == 1:
            return (Jmp if head == "jmp" else Bar)(_int(args[0], line))
        if head == "bar.group" and len(args) == 1:
            return Bar(_int(args[0], line), "group")
        if head == "br" and len(args) == 3 and re.fullmatch(r"r\d+", args[0]):
            return Br(Reg(int(args[0][1:])), _int(args[1], line), _int(args[2], line))
    except AssemblyError:
        raise
    raise AssemblyError(f"line {line}: bad terminator '{text}'")


def assemble(text: str, name: str = "kernel") -> Program:
    """Parse assembly text into a validated Program."""
    blocks: list[Block] = []
    cur: Block | None = None
    ended = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        if s.startswith(".kernel"):
            name = s.split(None, 1)[1].strip() if " " in s else name
            continue
        m = _BLOCK.match(s)
        if m:
            if cur is not None and not ended:
                raise AssemblyError(f"line {lineno}: block {len(blocks) - 1} has no terminator")
            if int(m.group(1)) != len(blocks):
                raise AssemblyError(f"line {lineno}: expected block {len(blocks)}, "
                                    f"found block {m.group(1)}")
            cur, ended = Block(), False
            blocks.append(cur)
            continue
        if cur is None:
            raise AssemblyError(f"line {lineno}: code before the first 'block N:'")
        if ended:
            raise AssemblyError(f"line {lineno}: code after the block's terminator")
        if s.startswith(".writeback"):
            regs = _split_operands(s[len(".writeback"):])
            try:
                cur.writeback = frozenset(_operand(r, lineno).n for r in regs)
            except AttributeError:
                raise AssemblyError(f"line {lineno}: .writeback takes registers") from None
            continue
        head = s.split(None, 1)[0]
        if head in ("jmp", "br", "bar", "bar.group", "exit"):
            cur.terminator = _terminator(s, lineno)
            ended = True
            continue
        cur.stages.append([_instr(part, lineno) for part in s.split(";")])
    if cur is not None and not ended:
        raise AssemblyError(f"block {len(blocks) - 1} has no terminator")
    try:
        return Program(blocks, name)
    except ProgramError as exc:
        raise AssemblyError(str(exc)) from None


def _fmt_operand(o) -> str:
    return str(o)


def format_instr(ins: Instr) -> str:
    parts = []
    if ins.dst is not None:
        parts.append(f"r{ins.dst}")
    for k, o in enumerate(ins.srcs):
        if ins.spec.kind in ("load", "store", "atomic") and k == 0:
            off = s32(ins.offset)
            sign = "+" if off >= 0 else "-"
            parts.append(f"[{o}{sign}{abs(off)}]" if off else f"[{o}]")
        else:
            parts.append(_fmt_operand(o))
    return f"{ins.op} {', '.join(parts)}" if parts else ins.op


def format_terminator(t) -> str:
    if isinstance(t, Jmp):
        return f"jmp {t.target}"
    if isinstance(t, Bar):
        return f"bar {t.target}" if t.scope == "cta" else f"bar.{t.scope} {t.target}"
    if isinstance(t, Br):
        return f"br {t.cond}, {t.taken}, {t.not_taken}"
    return "exit"


def disassemble(prog: Program) -> str:
    out = [f".kernel {prog.name}"]
    for bi, b in enumerate(prog.blocks):
        out.append(f"block {bi}:")
        for st in b.stages:
            out.append("  " + " ; ".join(format_instr(i) for i in st))
        out.append("  .writeback " + ", ".join(f"r{r}" for r in sorted(b.writeback or ())))
        out[-1] = out[-1].rstrip()
        out.append("  " + format_terminator(b.terminator))
    return "\n".join(out) + "\n"
