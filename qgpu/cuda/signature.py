"""cuda.signature: kernel parameter names and C types, read from the CUDA source.

PTX keeps only parameter positions; the launch API and `qgpu run --arg NAME=...` need the
names and whether each is an int, an unsigned, or a pointer to one. This is a small parser
for __global__ function headers (not a C parser): it accepts int, unsigned [int],
signed [int], int32_t, uint32_t, with const/volatile/__restrict__, pointers (`T *p`,
`T p[]`), and reports anything else as a CompileError naming the file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qgpu.errors import CompileError

_SIGNED = {"int", "signed", "signed int", "int32_t", "long", "signed long", "long int"}
_UNSIGNED = {"unsigned", "unsigned int", "uint32_t", "unsigned long", "unsigned long int"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "register"}


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str          # "int" or "unsigned" (the element type for pointers)
    pointer: bool
    const: bool = False

    @property
    def signed(self) -> bool:
        return self.ctype == "int"

    def __str__(self) -> str:
        c = "const " if self.const else ""
        return f"{c}{self.ctype} {'*' if self.pointer else ''}{self.name}"


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[Param, ...]
    line: int

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.params))})"


def _blank(text: str) -> str:
    """Comments, string literals and preprocessor lines replaced by spaces (lines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j == -1 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j == -1 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    cont = False
    for k, ln in enumerate(lines):
        if cont or ln.lstrip().startswith("#"):
            cont = ln.rstrip().endswith("\\")
            lines[k] = ""
    return "\n".join(lines)


def _param(text: str, index: int, kernel: str, where: str) -> Param:
    t = text.strip()
    t = re.sub(r"\b__attribute__\s*\(\(.*?\)\)", " ", t)
    if "&" in t:
        raise CompileError(f"{where}: parameter '{t}' of {kernel} is a reference; pass a "
                           "pointer or a value")
    array = bool(re.search(r"\[\s*\d*\s*\]\s*$", t))
    t = re.sub(r"\[\s*\d*\s*\]\s*$", "", t)
    stars = t.count("*") + (1 if array else 0)
    words = re.findall(r"[A-Za-z_]\w*", t.replace("*", " "))
    const = "const" in words
    words = [w for w in words if w not in _QUALIFIERS]
    name = f"arg{index}"
    if len(words) >= 2 and " ".join(words) not in _SIGNED | _UNSIGNED:
        name = words.pop()
    base = " ".join(words)
    if base in _SIGNED:
        ctype = "int"
    elif base in _UNSIGNED:
        ctype = "unsigned"
    else:
        raise CompileError(f"{where}: parameter '{text.strip()}' of {kernel}: qgpu launches "
                           "kernels whose parameters are int, unsigned (32-bit) or pointers to "
                           f"them, not '{base or t}'")
    if stars > 1:
        raise CompileError(f"{where}: parameter '{text.strip()}' of {kernel}: pointers to "
                           "pointers are not supported")
    return Param(name, ctype, stars == 1, const)


def parse_kernels(source: str, filename: str = "kernel.cu") -> list[KernelSignature]:
    """Every __global__ function defined in source, in order."""
    text = re.sub(r"\b__launch_bounds__\s*\([^)]*\)", lambda m: " " * len(m.group(0)),
                  _blank(source))
    kernels = []
    for m in re.finditer(r"\b__global__\b", text):
        line = text.count("\n", 0, m.start()) + 1
        where = f"{filename}:{line}"
        head_start = text.rfind(";", 0, m.start())
        head_start = max(head_start, text.rfind("}", 0, m.start()))
        prefix = text[head_start + 1:m.start()]
        paren = text.find("(", m.end())
        if paren == -1:
            continue
        decl = text[m.end():paren]
        if "template" in prefix or "<" in decl:
            raise CompileError(f"{where}: template kernels are not supported")
        nm = re.search(r"([A-Za-z_]\w*)\s*$", decl)
        if not nm:
            continue
        depth, j = 0, paren
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        after = text[j + 1:j + 200].lstrip()
        if after.startswith(";"):
            continue                # a declaration; the definition comes elsewhere
        plist = text[paren + 1:j]
        parts = [p for p in plist.split(",")] if plist.strip() not in ("", "void") else []
        params = tuple(_param(p, k, nm.group(1), where) for k, p in enumerate(parts))
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise CompileError(f"{where}: {nm.group(1)} has two parameters with one name")
        kernels.append(KernelSignature(nm.group(1), params, line))
    return kernels


def ptx_base_name(ptx_name: str) -> str:
    """The source name of a kernel from its PTX name: Itanium-mangled (_Z3dotPiS_i, or
    _ZN2ns3dotEPi inside a namespace) or plain (extern "C")."""
    if ptx_name.startswith("_ZN"):
        pos, last = 3, ptx_name
        while (m := re.match(r"\d+", ptx_name[pos:])) is not None:
            n = int(m.group(0))
            last = ptx_name[pos + m.end():pos + m.end() + n]
            pos += m.end() + n
        return last
    m = re.match(r"^_Z(\d+)", ptx_name)
    if m:
        return ptx_name[m.end():m.end() + int(m.group(1))]
    return ptx_name
