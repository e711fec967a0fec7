"""fuzz.cuda_lang: the language of the CUDA fuzzer (fuzz.cuda_kernels): random
programs over int and unsigned, their CUDA source, and their meaning under C semantics
evaluated in Python, plus a check of that evaluator against clang-19 host code.

Types are "i" (int) and "u" (unsigned). Every construct is emitted without undefined
behaviour (see fuzz.cuda_kernels), and the evaluator follows the emitted C exactly.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

INT_MIN = -(2**31)
MASK = 0xFFFFFFFF


def s32(x: int) -> int:
    x &= MASK
    return x - (1 << 32) if x >> 31 else x


def u32(x: int) -> int:
    return x & MASK


def as_type(value: int, typ: str) -> int:
    return s32(value) if typ == "i" else u32(value)


def common(a: str, b: str) -> str:
    return "u" if "u" in (a, b) else "i"


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# --- the expression tree -----------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    name: str
    typ: str


@dataclass(frozen=True)
class Const:
    value: int
    typ: str


@dataclass(frozen=True)
class Unary:
    op: str          # "-", "~", "!", "abs", "popc", "clz", "brev", "(int)", "(unsigned)"
    arg: object

    @property
    def typ(self) -> str:
        if self.op in ("!", "abs", "popc", "clz", "(int)"):
            return "i"
        if self.op in ("brev", "(unsigned)"):
            return "u"
        return self.arg.typ


@dataclass(frozen=True)
class Binary:
    op: str
    left: object
    right: object

    @property
    def typ(self) -> str:
        if self.op in COMPARE or self.op in ("&&", "||"):
            return "i"
        if self.op in ("<<", ">>"):
            return self.left.typ
        return common(self.left.typ, self.right.typ)


@dataclass(frozen=True)
class Ternary:
    cond: object
    then: object
    other: object

    @property
    def typ(self) -> str:
        return common(self.then.typ, self.other.typ)


ARITH = ("+", "-", "*", "&", "|", "^", "/", "%", "<<", ">>", "min", "max")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")


# --- C source ----------------------------------------------------------------------------

HELPERS = """\
__device__ int q_sdiv(int a, int b) { return (b == 0 || (a == INT_MIN_ && b == -1)) ? a : a / b; }
__device__ int q_srem(int a, int b) { return (b == 0 || (a == INT_MIN_ && b == -1)) ? a : a % b; }
__device__ unsigned q_udiv(unsigned a, unsigned b) { return b == 0u ? a : a / b; }
__device__ unsigned q_urem(unsigned a, unsigned b) { return b == 0u ? a : a % b; }
"""

CTYPE = {"i": "int", "u": "unsigned"}


def c_const(value: int, typ: str) -> str:
    if typ == "u":
        return f"{u32(value)}u"
    if value == INT_MIN:
        return "(-2147483647 - 1)"
    return f"({value})" if value < 0 else str(value)


def c_expr(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return c_const(e.value, e.typ)
    if isinstance(e, Unary):
        a = c_expr(e.arg)
        if e.op == "-":
            return f"(int)(0u - (unsigned)({a}))" if e.typ == "i" else f"(0u - ({a}))"
        if e.op in ("~", "!"):
            return f"({e.op}({a}))"
        if e.op == "abs":
            return f"abs((int)({a}) == INT_MIN_ ? 0 : (int)({a}))"
        if e.op == "popc":
            return f"__popc((unsigned)({a}))"
        if e.op == "clz":
            return f"__clz((int)({a}))"
        if e.op == "brev":
            return f"__brev((unsigned)({a}))"
        return f"({e.op}({a}))"                            # casts
    if isinstance(e, Ternary):
        t = CTYPE[e.typ]
        return f"(({c_expr(e.cond)}) ? ({t})({c_expr(e.then)}) : ({t})({c_expr(e.other)}))"
    a, b, op, t = c_expr(e.left), c_expr(e.right), e.op, e.typ
    ct = CTYPE[common(e.left.typ, e.right.typ)]
    if op in ("+", "-", "*"):
        if t == "i":
            return f"(int)((unsigned)({a}) {op} (unsigned)({b}))"
        return f"(({a}) {op} ({b}))"
    if op in ("&", "|", "^", "&&", "||"):
        return f"(({a}) {op} ({b}))"
    if op in COMPARE:
        return f"(({ct})({a}) {op} ({ct})({b}))"
    if op in ("/", "%"):
        name = {("i", "/"): "q_sdiv", ("i", "%"): "q_srem", ("u", "/"): "q_udiv",
                ("u", "%"): "q_urem"}[(t, op)]
        return f"{name}(({ct})({a}), ({ct})({b}))"
    if op == "<<":
        if t == "i":
            return f"(int)((unsigned)({a}) << (({b}) & 31))"
        return f"(({a}) << (({b}) & 31))"
    if op == ">>":
        return f"(({a}) >> (({b}) & 31))"
    if op in ("min", "max"):
        return f"{op}(({ct})({a}), ({ct})({b}))"
    raise ValueError(op)


# --- Python meaning ----------------------------------------------------------------------


def evaluate(e, env: dict) -> int:
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Const):
        return as_type(e.value, e.typ)
    if isinstance(e, Unary):
        a = evaluate(e.arg, env)
        op = e.op
        if op == "-":
            return as_type(-a, e.typ)
        if op == "~":
            return as_type(~a, e.typ)
        if op == "!":
            return int(a == 0)
        if op == "abs":
            v = s32(a)
            return 0 if v == INT_MIN else abs(v)
        if op == "popc":
            return bin(u32(a)).count("1")
        if op == "clz":
            return 32 - u32(a).bit_length()
        if op == "brev":
            return int(f"{u32(a):032b}"[::-1], 2)
        return as_type(a, "i" if op == "(int)" else "u")
    if isinstance(e, Ternary):
        chosen = e.then if evaluate(e.cond, env) != 0 else e.other
        return as_type(evaluate(chosen, env), e.typ)
    op = e.op
    ct = common(e.left.typ, e.right.typ)
    a = as_type(evaluate(e.left, env), ct)
    b = as_type(evaluate(e.right, env), ct)
    if op in COMPARE:
        return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                    "!=": a != b}[op])
    if op == "&&":
        return int(a != 0 and b != 0)
    if op == "||":
        return int(a != 0 or b != 0)
    if op in ("<<", ">>"):
        a = as_type(evaluate(e.left, env), e.left.typ)
        k = evaluate(e.right, env) & 31
        return as_type(a << k if op == "<<" else a >> k, e.typ)
    if op in ("/", "%"):
        if b == 0 or (ct == "i" and a == INT_MIN and b == -1):
            return a
        if ct == "u":
            return a // b if op == "/" else a % b
        q = c_div(a, b)
        return q if op == "/" else a - b * q
    value = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
             "min": min(a, b), "max": max(a, b)}[op]
    return as_type(value, e.typ)


# --- programs ----------------------------------------------------------------------------

INPUT_VARS = [Var("a", "i"), Var("b", "i"), Var("c", "u"), Var("d", "u")]
LOCAL_VARS = [Var("x", "i"), Var("y", "u")]
THREAD_VAR = Var("t", "i")


@dataclass
class Program:
    """Statements (("assign", var, expr) | ("if", cond, then_stmt, else_stmt) |
    ("for", bound_expr, stmt)) then one output expression per out word."""
    statements: list
    outputs: list
    name: str = "fuzz"

    @property
    def n_outputs(self) -> int:
        return len(self.outputs)

    def source(self) -> str:
        lines = ["#define INT_MIN_ (-2147483647 - 1)", HELPERS,
                 f"__global__ void {self.name}(const int* in, int* out) {{",
                 "  int t = blockIdx.x * blockDim.x + threadIdx.x;",
                 "  int a = in[4 * t], b = in[4 * t + 1];",
                 "  unsigned c = (unsigned)in[4 * t + 2], d = (unsigned)in[4 * t + 3];",
                 "  int x = a ^ 5;", "  unsigned y = c + 7u;"]
        for stmt in self.statements:
            lines += ["  " + line for line in _c_statement(stmt)]
        for j, e in enumerate(self.outputs):
            lines.append(f"  out[{self.n_outputs} * t + {j}] = (int)({c_expr(e)});")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _c_statement(stmt) -> list[str]:
    kind = stmt[0]
    if kind == "assign":
        _, var, e = stmt
        return [f"{var.name} = ({CTYPE[var.typ]})({c_expr(e)});"]
    if kind == "if":
        _, cond, then, other = stmt
        return ([f"if ({c_expr(cond)}) {{"] + ["  " + s for s in _c_statement(then)]
                + ["} else {"] + ["  " + s for s in _c_statement(other)] + ["}"])
    _, bound, body = stmt
    return ([f"for (int k = 0; k < (int)(({c_expr(bound)}) & 3u); ++k) {{"]
            + ["  " + s for s in _c_statement(body)] + ["}"])


def _run_statement(stmt, env: dict) -> None:
    kind = stmt[0]
    if kind == "assign":
        _, var, e = stmt
        env[var.name] = as_type(evaluate(e, env), var.typ)
    elif kind == "if":
        _, cond, then, other = stmt
        _run_statement(then if evaluate(cond, env) != 0 else other, env)
    else:
        _, bound, body = stmt
        k = 0
        while k < u32(evaluate(bound, env)) & 3:   # C re-evaluates the bound every time
            env["k"] = k
            _run_statement(body, env)
            k += 1
        env.pop("k", None)


def run_program_python(program: Program, inputs: list[int], t: int) -> list[int]:
    """The program's out words (as int32 values) for one thread."""
    a, b, c, d = inputs
    env = {"a": s32(a), "b": s32(b), "c": u32(c), "d": u32(d), "t": t}
    env["x"] = s32(env["a"] ^ 5)
    env["y"] = u32(env["c"] + 7)
    for stmt in program.statements:
        _run_statement(stmt, env)
    return [s32(evaluate(e, env)) for e in program.outputs]


# --- generation --------------------------------------------------------------------------


class Generator:
    """Random expressions and statements; at most `max_div` divisions per program (each
    one expands into a long instruction sequence on the machine)."""

    def __init__(self, rng: random.Random, max_div: int = 1):
        self.rng = rng
        self.div_left = max_div

    def leaf(self, variables):
        rng = self.rng
        if rng.random() < 0.6:
            return rng.choice(variables)
        typ = rng.choice("iu")
        value = rng.choice([0, 1, 2, 3, 5, 7, 8, 16, 31, 32, 100, 255, -1, -2, -7, -100,
                            0x7FFFFFFF, INT_MIN, 0x12345678, rng.randint(-2**31, 2**31 - 1)])
        return Const(as_type(value, typ), typ)

    def expr(self, depth: int, variables):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(variables)
        kind = rng.random()
        if kind < 0.15:
            op = rng.choice(["-", "~", "!", "abs", "popc", "clz", "brev", "(int)",
                             "(unsigned)"])
            return Unary(op, self.expr(depth - 1, variables))
        if kind < 0.25:
            return Ternary(self.expr(depth - 1, variables), self.expr(depth - 1, variables),
                           self.expr(depth - 1, variables))
        choices = list(ARITH) + list(COMPARE) + ["&&", "||"]
        op = rng.choice(choices)
        if op in ("/", "%"):
            if self.div_left <= 0:
                op = rng.choice(["+", "-", "*", "^"])
            else:
                self.div_left -= 1
        return Binary(op, self.expr(depth - 1, variables), self.expr(depth - 1, variables))

    def statement(self, variables, depth: int = 0):
        rng = self.rng
        target = rng.choice(LOCAL_VARS + INPUT_VARS)
        kind = rng.random()
        if depth == 0 and kind < 0.2:
            return ("if", self.expr(2, variables), self.statement(variables, 1),
                    self.statement(variables, 1))
        if depth == 0 and kind < 0.35:
            body_vars = variables + [Var("k", "i")]
            return ("for", self.expr(1, variables), self.statement(body_vars, 1))
        return ("assign", target, self.expr(rng.randint(1, 3), variables))


def generate_program(rng: random.Random, max_div: int = 1) -> Program:
    gen = Generator(rng, max_div)
    variables = INPUT_VARS + LOCAL_VARS + [THREAD_VAR]
    statements = [gen.statement(variables) for _ in range(rng.randint(0, 3))]
    outputs = [gen.expr(rng.randint(1, 4), variables) for _ in range(rng.randint(1, 3))]
    return Program(statements, outputs)


# --- the evaluator against native C ------------------------------------------------------

_HOST_PRELUDE = """\
#include <cstdio>
#include <cstdlib>
#define __device__ static
#define __global__
static int __popc(unsigned x) { return __builtin_popcount(x); }
static int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
static int min(int a, int b) { return a < b ? a : b; }
static unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }
static unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
struct Idx { unsigned x; };
static Idx blockIdx, blockDim, threadIdx;
"""


def host_source(program: Program, inputs: list[list[int]]) -> str:
    words = ", ".join(str(s32(v)) for row in inputs for v in row)
    n = len(inputs)
    return (_HOST_PRELUDE + program.source()
            + f"int main() {{\n  static const int in[] = {{{words}}};\n"
            f"  static int out[{n * program.n_outputs}];\n"
            f"  blockDim.x = {n};\n"
            f"  for (unsigned i = 0; i < {n}; ++i) {{ threadIdx.x = i; "
            f"{program.name}(in, out); }}\n"
            f"  for (int i = 0; i < {n * program.n_outputs}; ++i) printf(\"%d\\n\", out[i]);\n"
            "}\n")


def host_check(program: Program, inputs: list[list[int]], clang: str = "clang++-19"):
    """None when clang-19's native (x86-64, -O2, UB sanitizer trapping) build of the same
    program agrees with the Python evaluator on these inputs, else a description."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "p.cpp"
        exe = Path(tmp) / "p"
        src.write_text(host_source(program, inputs))
        build = subprocess.run([clang, "-O2", "-w", "-fsanitize=undefined",
                                "-fno-sanitize-recover=all", str(src), "-o", str(exe)],
                               capture_output=True, text=True)
        if build.returncode:
            return "host compile failed: " + build.stderr[:1000]
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=20)
        if run.returncode:
            return "host run failed (undefined behaviour?): " + run.stderr[:1000]
        got = [int(v) for v in run.stdout.split()]
    want = [v for t, row in enumerate(inputs) for v in run_program_python(program, row, t)]
    return None if got == want else f"host {got} != python {want}"
