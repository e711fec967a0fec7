"""cuda.signature: every kernel of a source, with its parameters' C types, from clang's AST.

PTX keeps only parameter positions and widths; the launch API and `qgpu run --arg
NAME=...` need names, element types and constness, and the kernel's C++ name (namespaces,
overloads, template arguments). clang itself supplies them after preprocessing and
typedefs (driver.kernel_ast: `-ast-dump=json`, compiled for a 64-bit GPU so that `long`
and `size_t` keep the widths a GPU gives them). Each kernel is judged alone: a kernel whose
parameters or body qgpu cannot run exactly gets `problem` (file:line and what to change)
instead of stopping its siblings.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

import numpy as np

from qgpu.errors import CompileError

# C element type -> (numpy dtype, the spelling messages use). char is signed on a GPU.
ELEMENTS = {
    "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8, "bool": np.bool_,
    "short": np.int16, "unsigned short": np.uint16, "int": np.int32, "unsigned int": np.uint32,
    "float": np.float32, "long long": np.int64, "unsigned long long": np.uint64,
}
# long and size_t are 64 bits on a GPU but 32 in qgpu's -m32 PTX (element size and
# arithmetic would differ): refused; long long is 64 bits in both, on register pairs
_WIDE = {"long", "unsigned long", "double", "long double", "__int128", "unsigned __int128"}
_SCALARS = {"int", "unsigned int", "float", "char", "signed char", "unsigned char", "bool",
            "short", "unsigned short", "long long", "unsigned long long"}
# the C library's 64-bit exact-width names: `long` in the 64-bit host's headers this AST
# is parsed with, `long long` in the -m32 compile's: 64 bits in both, so long long here
_EXACT64 = re.compile(r"\b(?:__)?(u?)(?:int64_t|int_least64_t|int_fast64_t|intmax_t)\b")


def _exact64(text: str) -> str:
    return _EXACT64.sub(lambda m: "unsigned long long" if m.group(1) else "long long", text)


_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict|restrict|struct|class|union)\b")


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str            # the element type for pointers ("unsigned char", "struct P")
    pointer: bool
    const: bool = False
    dtype: str | None = None   # numpy dtype of the element; None: raw bytes (structs, void)

    @property
    def signed(self) -> bool:
        return self.dtype is None or np.dtype(self.dtype).kind in "if"

    @property
    def bytes(self) -> int:
        return np.dtype(self.dtype).itemsize if self.dtype else 1

    def __str__(self) -> str:
        c = "const " if self.const else ""
        return f"{c}{self.ctype} {'*' if self.pointer else ''}{self.name}"


@dataclass(frozen=True)
class KernelSignature:
    name: str                  # the C++ name: "k", "ns::k", "reduce<int>"
    params: tuple[Param, ...]
    line: int
    file: str = ""
    mangled: str = ""          # the PTX entry's name
    problem: str | None = None   # why qgpu cannot launch it (None: it can be tried)
    max_threads: int | None = None   # __launch_bounds__' first argument

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.params))})"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def overload(self) -> str:
        """The name with its parameter types, k(int *, unsigned int): names an overload."""
        return f"{self.name}({', '.join(_ptype(p) for p in self.params)})"


def _ptype(p: Param) -> str:
    return f"{'const ' if p.const else ''}{p.ctype}{' *' if p.pointer else ''}"


class _Locations:
    """clang's JSON writes a location's file and line only when they change: replaying
    every location in document order recovers them."""

    def __init__(self):
        self.file, self.line = "", 0

    def visit(self, loc: dict) -> tuple[str, int]:
        if "expansionLoc" in loc:
            self.visit(loc.get("spellingLoc", {}))
            return self.visit(loc["expansionLoc"])
        self.file = loc.get("file", self.file)
        self.line = loc.get("line", self.line)
        return self.file, self.line


def _type(t: dict) -> str:
    sugared = t.get("qualType", "")
    if _EXACT64.search(sugared):
        return _exact64(sugared)
    return t.get("desugaredQualType", sugared)


def _desugar(text: str, typedefs: dict) -> str:
    """A pointer's pointee through typedefs (clang's JSON desugars only the outer type)."""
    for _ in range(16):
        head, star, rest = text.partition("*")
        # std::uint16_t is the C library's uint16_t (<cstdint> re-declares it in std)
        words = [w[5:] if w.startswith("std::") and w[5:] in typedefs else w
                 for w in head.split()]
        names = [w for w in words if w in typedefs]
        if not names:
            return text
        inner = typedefs[names[0]]
        head = " ".join(inner if w == names[0] else w for w in words)
        text = head + (" " if star and not head.endswith("*") else "") + star + rest
    return text


def _base(head: str) -> str:
    """A C type's base name without qualifiers, in the spelling ELEMENTS uses."""
    base = " ".join(_QUALIFIERS.sub(" ", head).split())
    return {"unsigned": "unsigned int", "signed": "int", "signed int": "int",
            "short int": "short", "unsigned short int": "unsigned short",
            "long int": "long", "unsigned long int": "unsigned long",
            "long long int": "long long", "unsigned long long int": "unsigned long long",
            "_Bool": "bool"}.get(base, base)


def _param(p: dict, index: int, typedefs: dict) -> tuple[Param | None, str | None]:
    """(Param, None) or (None, why qgpu cannot pass it)."""
    name = p.get("name") or f"arg{index}"
    text = _desugar(_type(p.get("type", {})), typedefs)
    shown = p.get("type", {}).get("qualType", text)
    shown += "" if shown.endswith("*") else " "      # the declaration, as written: 'int *a'
    if "&" in text:
        return None, f"parameter '{shown}{name}' is a reference; pass a pointer or a value"
    if "(" in text or "[" in text:
        return None, f"parameter '{shown}{name}' is not a value or a plain pointer"
    stars = text.count("*")
    if stars > 1:
        return None, f"parameter '{shown}{name}' is a pointer to a pointer (not supported)"
    head = text.split("*")[0]
    const = bool(re.search(r"\bconst\b", head))
    base = _base(head)
    if base in ("long", "unsigned long"):
        return None, (f"parameter '{shown}{name}' is 64 bits on a GPU ({base}; size_t is "
                      "unsigned long) but 32 in qgpu's 32-bit compile: use long long / "
                      "int64_t (64 bits in both) or int")
    if base in _WIDE:
        return None, (f"parameter '{shown}{name}' is 64 bits on a GPU ({base}); the "
                      "machine computes in 32 bits: use int or unsigned")
    kind = "struct " + base if re.search(r"\b(struct|class|union)\b", head) or (
        base not in ELEMENTS and base != "void") else base
    if stars == 1:
        dtype = ELEMENTS.get(base)
        return Param(name, kind if dtype is None and base != "void" else base, True, const,
                     np.dtype(dtype).name if dtype else None), None
    if base not in _SCALARS:
        return None, (f"parameter '{shown}{name}': qgpu passes integers, float and pointers "
                      f"by value, not {kind} (pass a pointer to it)")
    return Param(name, base, False, const, np.dtype(ELEMENTS[base]).name), None


# expressions computed in 64 bits on a GPU that -m32 would compute in 32: refused in device
# code unless they are constants (sizeof(int) is 4 in either width)
_WIDE_CODE = {"long", "unsigned long"}
_ARITH = {"BinaryOperator", "CompoundAssignOperator", "UnaryOperator", "VarDecl"}
_CONSTANT = {"IntegerLiteral", "UnaryExprOrTypeTraitExpr", "CharacterLiteral", "ParenExpr",
             "ImplicitCastExpr", "CStyleCastExpr", "BinaryOperator", "ConstantExpr"}


def _constant(node: dict) -> bool:
    return node.get("kind") in _CONSTANT and all(_constant(c) for c in node.get("inner", []))


def _clock_value(n: dict) -> bool:
    """A clock_t variable or difference: clock() is 0 in qgpu (qgpu_cuda.h), so these hold
    0 in 32 bits as in 64."""
    return n.get("type", {}).get("qualType", "").replace("const ", "") == "clock_t"


def _wide(n: dict):
    kind = n.get("kind")
    if kind in _ARITH and _type(n.get("type", {})).replace("const ", "") in _WIDE_CODE \
            and not _constant(n) and not (kind == "VarDecl" and n.get("constexpr")) \
            and not _clock_value(n):
        return (f"'{n.get('type', {}).get('qualType', 'long')}' is 64 bits on a GPU and qgpu "
                "computes in 32: use int or unsigned (or int64 values the machine refuses)")
    return None


_TILE = re.compile(r"thread_block_tile<\s*(\d+)")


def _big_tile(n: dict):
    m = _TILE.search(n.get("type", {}).get("qualType", ""))
    if m and int(m.group(1)) not in (1, 2, 4, 8, 16, 32):
        return (f"tiled_partition<{m.group(1)}>: a tile has 1, 2, 4, 8, 16 or 32 threads "
                "(a power of two up to CUDA's 32-lane warp); use the thread block for more")
    return None


def _first_use(node, fns: dict, seen: set, tests) -> tuple[tuple[str, int], str] | None:
    """The first node of a function body (following calls) that one of `tests` refuses:
    (its file and line, why)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, dict):
            continue
        for test in tests:
            why = test(n)
            if why:
                return n.get("_where") or ("", 0), why
        ref = n.get("referencedDecl", {})
        if ref.get("kind") == "FunctionDecl" and ref["id"] in fns and ref["id"] not in seen:
            seen.add(ref["id"])
            body = [c for c in fns[ref["id"]][0].get("inner", []) if c.get("kind") ==
                    "CompoundStmt"]
            stack.extend(body)
        stack.extend(reversed(n.get("inner", [])))
    return None


def kernels_from_ast(ast: dict, filename: str) -> list[KernelSignature]:
    """Every __global__ function clang defined (template instantiations included)."""
    fns: dict = {}
    locs = _Locations()
    typedefs = _walk_marking(ast, locs, fns, ())
    out = []
    for node, file, line, ns in fns.values():
        inner = node.get("inner", [])
        kinds = {c.get("kind") for c in inner}
        if "CUDAGlobalAttr" not in kinds or "CompoundStmt" not in kinds \
                or not node.get("mangledName"):
            continue
        targs = [_type(c.get("type", {})) or str(c.get("value", "")) for c in inner
                 if c.get("kind") == "TemplateArgument"]
        name = "::".join(ns + (node["name"],))
        if targs:
            name += "<" + ", ".join(targs) + ">"
        where = f"{file or filename}:{line}"
        params, problem = [], None
        for k, p in enumerate(c for c in inner if c.get("kind") == "ParmVarDecl"):
            param, why = _param(p, k, typedefs)
            if why and problem is None:
                problem = f"{where}: kernel {name}: {why}"
            if param:
                params.append(param)
        names = [p.name for p in params]
        if problem is None and len(set(names)) != len(names):
            problem = f"{where}: kernel {name} has two parameters with one name"
        if problem is None:
            body = [c for c in inner if c.get("kind") == "CompoundStmt"]
            found = _first_use(body, fns, {node["id"]}, (_wide, _big_tile))
            if found:
                (wfile, wline), why = found
                problem = f"{wfile or file or filename}:{wline}: kernel {name}: {why}"
        bounds = next((c for c in inner if c.get("kind") == "CUDALaunchBoundsAttr"), None)
        out.append(KernelSignature(name, tuple(params), line, file or filename,
                                   node["mangledName"], problem, _bound(bounds)))
    return out


def _bound(attr: dict | None) -> int | None:
    if not attr:
        return None
    for n in _iter(attr):
        if n.get("kind") == "ConstantExpr" and "value" in n:
            return int(n["value"])
        if n.get("kind") == "IntegerLiteral":
            return int(n["value"])
    return None


def _iter(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            yield n
            stack.extend(reversed(n.get("inner", [])))


def _walk_marking(node, locs: _Locations, out: dict, ns: tuple) -> dict:
    """Replays locations (each node's is stored as `_where`, for messages); records every
    FunctionDecl by id with (node, file, line, namespaces); returns the typedefs."""
    typedefs = {}
    stack = [(node, ns)]
    while stack:
        n, cur_ns = stack.pop()
        if isinstance(n, list):
            stack.extend((x, cur_ns) for x in reversed(n))
            continue
        if not isinstance(n, dict):
            continue
        where = None
        if isinstance(n.get("loc"), dict):
            where = locs.visit(n["loc"])
        rng = n.get("range")
        if isinstance(rng, dict):
            for end in ("begin", "end"):
                if end in rng:
                    w = locs.visit(rng[end])
                    where = where or w
        ref = n.get("referencedDecl")
        if isinstance(ref, dict) and isinstance(ref.get("loc"), dict):
            locs.visit(ref["loc"])
        if where is not None:
            n["_where"] = where
        if n.get("kind") == "FunctionDecl" and where is not None:
            out[n["id"]] = (n, where[0], where[1], cur_ns)
        elif n.get("kind") in ("TypedefDecl", "TypeAliasDecl") and "name" in n:
            typedefs[n["name"]] = _type(n.get("type", {}))
        inner_ns = cur_ns + (n.get("name", ""),) if n.get("kind") == "NamespaceDecl" else cur_ns
        stack.extend((x, inner_ns) for x in reversed(n.get("inner", [])))
    return typedefs


def parse_kernels(source: str | bytes, filename: str = "kernel.cu",
                  includes: tuple[str, ...] = ()) -> list[KernelSignature]:
    """Every kernel of a source (clang's AST; CompileError when clang refuses the file)."""
    return list(_kernels_of(source, filename, includes))


# The AST of one file is ~6.5 MB of JSON (the shipped headers' declarations) and ~0.35 s
# of CPU; the signatures are a few hundred bytes. Keeping the signatures (not the AST,
# which costs tens of MB per file in Python) lets the suite, its tests and the API ask
# again for free: the test session loaded the suite's 80+ files once per test module.
@functools.lru_cache(maxsize=1024)
def _kernels_of(source: str | bytes, filename: str,
                includes: tuple[str, ...]) -> tuple[KernelSignature, ...]:
    from qgpu.cuda.driver import kernel_ast
    return tuple(kernels_from_ast(kernel_ast(source, filename, includes),
                                  os.fsdecode(filename)))


@functools.lru_cache(maxsize=256)
def variable_elements(source: str | bytes, filename: str = "kernel.cu",
                      includes: tuple[str, ...] = ()) -> dict[str, tuple[str, str]]:
    """The file's own __constant__ and __device__ variables of a scalar element type (a
    scalar or an array of them): name -> (numpy dtype, C type). PTX declares most of them
    as bytes (.b8), so `set_symbol` asks the source how to store a list of numbers."""
    from qgpu.cuda.driver import kernel_ast
    out = {}
    for node in kernel_ast(source, filename, includes).get("inner", []):
        kinds = {c.get("kind") for c in node.get("inner", [])}
        if node.get("kind") != "VarDecl" or not kinds & {"CUDAConstantAttr",
                                                          "CUDADeviceAttr"}:
            continue
        text = _type(node.get("type", {}))
        base = _base(text.split("[")[0])
        if "*" not in text and base in ELEMENTS and node.get("name"):
            out[node["name"]] = (np.dtype(ELEMENTS[base]).name, base)
    return out


def find_kernel(kernels: list[KernelSignature], name: str, filename: str) -> KernelSignature:
    """The kernel `name` names: its C++ name ("ns::k", "reduce<int>"), its last part when
    that is unique, or a C++ overload "k(int *)"; an ambiguous name is an error that lists
    the candidates."""
    def norm(s: str) -> str:
        return re.sub(r"\s+", "", s).replace("unsignedint", "unsigned")
    want = norm(name)
    for test in (lambda k: norm(k.name) == want, lambda k: norm(k.overload) == want,
                 lambda k: norm(k.mangled) == want,
                 lambda k: norm(k.name.split("<")[0].split("::")[-1]) == want,
                 lambda k: norm(k.name.split("::")[-1]) == want):
        found = [k for k in kernels if test(k)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise CompileError(f"{filename}: '{name}' names {len(found)} kernels: "
                               f"{'; '.join(k.overload for k in found)}; give one of these "
                               "with --kernel")
    raise CompileError(f"{filename}: no __global__ function named '{name}' (kernels: "
                       f"{', '.join(k.name for k in kernels) or 'none'})")


_LONG_CODES = str.maketrans("lm", "xy")


def ptx_entry(mangled: str, entries) -> str:
    """The PTX entry of a kernel the 64-bit AST mangled: itself, or the one entry that
    differs only where the AST says long (l, m) and the -m32 compile long long (x, y),
    which is how int64_t/uint64_t parameters mangle in the two (kernels with real `long`
    parameters are refused before this)."""
    if mangled in entries:
        return mangled
    want = mangled.translate(_LONG_CODES)
    found = [e for e in entries if e.translate(_LONG_CODES) == want]
    return found[0] if len(found) == 1 else mangled
