"""cuda.ptx: a parser for the PTX text that clang's NVPTX back end writes.

It owns the PTX syntax only: module-level variables, .entry/.func bodies, register and
shared declarations, labels, predicated instructions and their operands, and the `.loc`
line table (so that later stages can name the CUDA source line of an instruction). What
the instructions mean is cuda.lower's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from qgpu.errors import CompileError


@dataclass(frozen=True)
class PReg:
    """A PTX register (%r5, %p1) or special register (%tid.x)."""
    name: str


@dataclass(frozen=True)
class PImm:
    value: int


@dataclass(frozen=True)
class PSym:
    """A symbol used as a value: a variable's address, a label or a parameter."""
    name: str


@dataclass(frozen=True)
class PAddr:
    """A memory operand [base+offset]; base is a PReg, a PSym or None (absolute)."""
    base: PReg | PSym | None
    offset: int


@dataclass(frozen=True)
class PVec:
    """A vector operand {a, b, ...} (rejected by the lowering; parsed for its message)."""
    items: tuple


@dataclass(frozen=True)
class PPair:
    """A two-destination operand d|p (setp, shfl with a predicate output)."""
    first: PReg
    second: PReg


@dataclass
class PInstr:
    opcode: str                 # the full dotted opcode, e.g. "setp.lt.s32"
    operands: list
    guard: PReg | None = None   # @%p / @!%p
    guard_negated: bool = False
    line: int = 0               # PTX line number
    text: str = ""              # the instruction as written
    loc: tuple[str, int] | None = None   # (source file, line) from .loc

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")

    def where(self) -> str:
        src = f" (from {self.loc[0]}:{self.loc[1]})" if self.loc else ""
        return f"PTX line {self.line}: '{self.text}'{src}"


def fail(ins: PInstr, what: str) -> CompileError:
    """The error for a PTX instruction the front end cannot lower, naming its line."""
    return CompileError(f"{ins.where()}: {what}")


@dataclass
class PLabel:
    name: str
    line: int = 0


@dataclass
class PVar:
    """A .shared/.global/.const variable: name, space, size in bytes, initial bytes."""
    name: str
    space: str
    size: int
    align: int = 4
    init: list[int] | None = None   # element values (of elem_bytes each)
    elem_bytes: int = 1
    line: int = 0
    dynamic: bool = False            # `extern __shared__ T s[]`: sized at launch time
    problem: str | None = None       # why a kernel using it cannot run (a pointer initialiser)


@dataclass
class PFunction:
    name: str
    is_entry: bool
    params: list[tuple[str, str]]          # (name, type such as "u32")
    body: list = field(default_factory=list)   # PInstr | PLabel
    variables: list[PVar] = field(default_factory=list)   # function-scope .shared
    line: int = 0
    locals_used: bool = False              # a .local declaration (a stack frame)
    error: CompileError | None = None      # its first unparsable instruction (raised when
    # this function is lowered, so one kernel's PTX does not stop its siblings)


@dataclass
class PModule:
    functions: dict[str, PFunction]
    variables: list[PVar]
    address_size: int = 32


_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)U?$")
_FUNC = re.compile(r"^(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(entry|func)\b")
_VAR = re.compile(r"^(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(shared|global|const|local)\s+(.*)$")
_VAR_DECL = re.compile(r"^(?:\.align\s+(\d+)\s+)?\.([a-z]+\d+)\s+([\w$.]+)\s*(?:\[(\d*)\])?"
                       r"\s*(?:=\s*(.*))?$")
_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "b32": 4, "u32": 4,
               "s32": 4, "b64": 8, "u64": 8, "s64": 8, "f32": 4, "f64": 8}


def parse_int(text: str) -> int | None:
    """A PTX integer literal (decimal, 0x hex, 0b binary, 0 octal), or None."""
    t = text.strip()
    if not _INT.match(t):
        return None
    t = t.rstrip("U")
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t[1:], 8)
    else:
        v = int(t)
    return sign * v


def _strip_comments(text: str) -> list[str]:
    """Remove // and /* */ comments, keeping the line structure."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return [ln.split("//", 1)[0] for ln in text.splitlines()]


def _statements(lines: list[str]):
    """Yield (line, statement) pieces: statements end at ';', labels at ':', braces alone."""
    buf, start = "", 0
    for no, raw in enumerate(lines, 1):
        s = raw.strip()
        while s:
            if not buf:
                start = no
                if s[0] in "{}":
                    yield no, s[0]
                    s = s[1:].strip()
                    continue
                if s.split()[0] in _LINE_DIRECTIVES:   # these end at the line's end
                    yield no, s
                    break
                m = re.match(r"^([$\w.]+):", s)
                if m and not s.startswith("."):
                    yield no, m.group(0)
                    s = s[m.end():].strip()
                    continue
            # a .entry header ends at '{' without a ';'
            semi = s.find(";")
            brace = s.find("{")
            # (an instruction's vector operand, mov.b64 {lo, hi}, %rd1, is no header)
            if brace != -1 and (semi == -1 or brace < semi) and not buf.lstrip().startswith(
                    (".global", ".const")) and "=" not in buf + s[:brace] \
                    and _is_header(buf + " " + s[:brace]):
                yield start, (buf + " " + s[:brace]).strip()
                yield no, "{"
                buf, s = "", s[brace + 1:].strip()
                continue
            if semi == -1:
                buf += " " + s
                s = ""
            else:
                yield start, (buf + " " + s[:semi]).strip() + ";"
                buf, s = "", s[semi + 1:].strip()
        if buf and not buf.strip():
            buf = ""
    if buf.strip():
        yield start, buf.strip()


def _is_header(text: str) -> bool:
    """Whether text before a '{' opens a function, section or scope (a directive), not an
    instruction's operand list."""
    t = text.strip()
    return not t or t.endswith(")") or t.startswith(".") \
        or re.search(r"\.(entry|func)\b", t) is not None


_LINE_DIRECTIVES = (".loc", ".file", ".version", ".target", ".address_size")


def _split_operands(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_operand(text: str, line: int = 0):
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].replace(" ", "")
        m = re.fullmatch(r"([%$\w.]+)?(?:\+?([-+]?(?:0[xX][0-9a-fA-F]+|\d+)))?", inner)
        if not m or not (m.group(1) or m.group(2)):
            raise CompileError(f"PTX line {line}: cannot parse address '{text}'")
        base_t, off_t = m.group(1), m.group(2)
        if base_t is not None and parse_int(base_t) is not None and off_t is None:
            return PAddr(None, parse_int(base_t))
        base = None
        if base_t is not None:
            base = PReg(base_t) if base_t.startswith("%") else PSym(base_t)
        return PAddr(base, parse_int(off_t) if off_t else 0)
    if t.startswith("{") and t.endswith("}"):
        return PVec(tuple(parse_operand(x, line) for x in _split_operands(t[1:-1])))
    if "|" in t:
        a, b = t.split("|", 1)
        return PPair(PReg(a.strip()), PReg(b.strip()))
    if t.startswith("%"):
        return PReg(t)
    v = parse_int(t)
    if v is not None:
        return PImm(v)
    if re.fullmatch(r"0[fFdD][0-9a-fA-F]+", t):
        # a float constant: its bit pattern (a double's only appears in f64 instructions,
        # which cuda.float32 refuses naming the source line)
        return PImm(int(t[2:], 16))
    return PSym(t)


def _parse_var(space: str, rest: str, line: int) -> PVar:
    rest = rest.rstrip(";").strip()
    m = _VAR_DECL.match(rest)
    if not m:
        raise CompileError(f"PTX line {line}: cannot parse the .{space} declaration '{rest}'")
    align, typ, name, count, init = m.groups()
    eb = _TYPE_BYTES.get(typ, 4)
    n = int(count) if count else 1
    if count == "":
        n = 0
    values = None
    if init is not None:
        items = [x for x in re.split(r"[{},\s]+", init) if x]
        values = []
        for x in items:
            v = parse_int(x)
            if v is None:
                # an address (`generic(_$_str)`: a table of string pointers): refused only
                # in the kernels that use the variable
                problem = (f"the initial value of {name} holds the address '{x}' (a table of "
                           "pointers); qgpu places integer data only")
                return PVar(name, space, n * eb, int(align) if align else eb, None, eb, line,
                            problem=problem)
            values.append(v)
        if count == "":
            n = len(values)
    return PVar(name, space, n * eb, int(align) if align else eb, values, eb, line,
                dynamic=count == "" and init is None)


def _parse_params(header: str, line: int) -> tuple[str, list[tuple[str, str]]]:
    m = re.match(r"^(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\s+"
                 r"(?:\([^)]*\)\s*)?([\w$]+)\s*(?:\((.*)\))?", header, re.S)
    if not m:
        raise CompileError(f"PTX line {line}: cannot parse the function header '{header}'")
    name, plist = m.group(1), m.group(2) or ""
    params = []
    for p in _split_operands(plist):
        pm = re.match(r"^\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)(\[\d+\])?", p)
        if not pm:
            raise CompileError(f"PTX line {line}: cannot parse parameter '{p}' of {name}")
        typ = pm.group(1) + ("[]" if pm.group(3) else "")
        params.append((pm.group(2), typ))
    return name, params


def parse(text: str) -> PModule:
    """Parse a PTX module."""
    lines = _strip_comments(text)
    functions: dict[str, PFunction] = {}
    variables: list[PVar] = []
    files: dict[int, str] = {}
    address_size = 32
    cur: PFunction | None = None
    depth = 0
    skip_depth = None          # inside a .section { } block
    pending_header: tuple[int, str] | None = None
    loc: tuple[int, int] | None = None
    for line, st in _statements(lines):
        if skip_depth is not None:
            if st == "{":
                skip_depth += 1
            elif st == "}":
                skip_depth -= 1
                if skip_depth == 0:
                    skip_depth = None
            continue
        if st == "{":
            depth += 1
            if pending_header is not None:
                name, params = _parse_params(pending_header[1], pending_header[0])
                is_entry = re.search(r"\.entry\b", pending_header[1]) is not None
                cur = PFunction(name, is_entry, params, line=pending_header[0])
                functions[name] = cur
                pending_header = None
            continue
        if st == "}":
            depth -= 1
            if depth == 0:
                cur = None
            continue
        body = st.rstrip(";").strip()
        if body.startswith(".section"):
            skip_depth = 0
            continue
        if cur is None:
            if _FUNC.match(body):
                if st.endswith(";"):     # a prototype (.extern .func f(...);)
                    continue
                pending_header = (line, body)
                continue
            if body.startswith(".address_size"):
                body = body.rstrip(";")
                address_size = int(body.split()[1])
                continue
            if body.split()[0] == ".file":
                m = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', body)
                if m:
                    files[int(m.group(1))] = m.group(2)
                continue
            vm = _VAR.match(body)
            if vm:
                variables.append(_parse_var(vm.group(1), vm.group(2), line))
            continue
        # inside a function body
        if body.endswith(":") and not body.startswith("."):
            cur.body.append(PLabel(body[:-1], line))
            continue
        if body.split()[0] == ".loc":
            parts = body.split()
            loc = (int(parts[1]), int(parts[2]))
            continue
        if body.startswith(".reg") or body.startswith(".pragma") or body.startswith(
                (".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".noreturn")):
            continue
        vm = _VAR.match(body)
        if vm:
            if vm.group(1) == "local":
                cur.locals_used = True
            var = _parse_var(vm.group(1), vm.group(2), line)
            cur.variables.append(var)
            continue
        if body.startswith("."):
            continue            # other directives carry no code
        try:
            cur.body.append(_parse_instr(body, line, loc))
        except CompileError as exc:
            cur.error = cur.error or exc
    # resolve .loc file numbers now that every .file is known
    for fn in functions.values():
        for ins in fn.body:
            if isinstance(ins, PInstr) and ins.loc is not None:
                fno, lno = ins.loc
                ins.loc = (files.get(fno, f"file{fno}"), lno) if lno else None
    return PModule(functions, variables, address_size)


def _parse_instr(body: str, line: int, loc) -> PInstr:
    guard, neg = None, False
    m = re.match(r"^@(!?)(%[\w.]+)\s+", body)
    if m:
        neg = m.group(1) == "!"
        guard = PReg(m.group(2))
        body = body[m.end():]
    opcode, _, rest = body.partition(" ")
    if "\t" in opcode:
        opcode, _, rest2 = opcode.partition("\t")
        rest = rest2 + " " + rest
    operands = [parse_operand(o, line) for o in _split_operands(rest)]
    text = ("@" + ("!" if neg else "") + guard.name + " " if guard else "") + \
        f"{opcode} {rest.strip()}".strip()
    return PInstr(opcode.strip(), operands, guard, neg, line, re.sub(r"\s+", " ", text), loc)
