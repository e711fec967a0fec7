"""Measure qgpu's import graph: cycles between modules, imports against the pipeline's
direction, imports inside functions, file count, the largest files and the file names
that repeat across packages.

    python benchmarks/import_graph.py [--edges] [--json] [--root CHECKOUT]

The pipeline order is the layers contract of pyproject.toml (what lint-imports checks,
and the README's architecture table): a package may import the packages below it (and
itself); an import of a package above it is a back arrow. For a checkout from before the
contract (--root), the order of this one applies.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "qgpu"



def pipeline_order() -> list[str]:
    """The layers contract's packages, lowest first, then the package's own entry points."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [n.removeprefix("qgpu.") for n in reversed(contract["layers"])] + ["__init__",
                                                                              "__main__"]


ORDER = pipeline_order()


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(mod: str, is_pkg: bool, node: ast.ImportFrom | ast.Import,
            known: dict[str, Path]) -> list[str]:
    """Modules of qgpu that an import statement names (a name imported from a package
    counts as the submodule when one of that name exists)."""
    out = []
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name == "qgpu" or a.name.startswith("qgpu."):
                out.append(longest_known(a.name, known))
        return out
    base = node.module or ""
    if node.level:
        pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    if not (base == "qgpu" or base.startswith("qgpu.")):
        return out
    for a in node.names:
        full = f"{base}.{a.name}"
        out.append(full if full in known else longest_known(base, known))
    return out


def longest_known(name: str, known: dict[str, Path]) -> str:
    parts = name.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def edges() -> tuple[list[tuple[str, str, int, bool]], dict[str, Path]]:
    """(importer, imported, line, inside a function) for every import of a qgpu module;
    imports under `if TYPE_CHECKING:` are left out (they run at no time)."""
    known = modules()
    found = []
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        walk(tree, mod, is_pkg, known, found, in_function=False)
    return found, known


def walk(node, mod, is_pkg, known, found, in_function):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            for target in resolve(mod, is_pkg, child, known):
                if target and target != mod:
                    found.append((mod, target, child.lineno, in_function))
            continue
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        walk(child, mod, is_pkg, known, found, inner)


def _type_checking(test) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def layer(mod: str) -> int:
    parts = mod.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return ORDER.index(top) if top in ORDER else -1


def measure() -> dict:
    found, known = edges()
    graph: dict[str, set[str]] = {}
    for a, b, _, _ in found:
        # importing a submodule runs its package's __init__ too, but the edge that
        # counts is the one written
        graph.setdefault(a, set()).add(b)
    # a package's __init__ re-exporting its own modules is not a cycle of the design:
    # leave `pkg -> pkg.sub` edges out of the cycle search
    design = {a: {b for b in bs if not b.startswith(a + ".")} for a, bs in graph.items()}
    circles = cycles(design)
    back = sorted({(a, b, line) for a, b, line, _ in found
                   if layer(a) >= 0 and layer(b) >= 0 and layer(b) > layer(a)})
    unknown = sorted({m.split(".")[1] for m in known if "." in m and layer(m) < 0})
    lines = {m: len(p.read_text().splitlines()) for m, p in known.items()}
    names: dict[str, list[str]] = {}
    for m, p in known.items():
        if p.name not in ("__init__.py", "__main__.py"):
            names.setdefault(p.name, []).append(m)
    return {
        "files": len(known),
        "lines": sum(lines.values()),
        "largest": sorted(lines.items(), key=lambda kv: -kv[1])[:8],
        "cycles": circles,
        "back_arrows": [f"{a} -> {b} (line {line})" for a, b, line in back],
        "function_level_imports": sum(1 for *_, f in found if f),
        "unplaced_packages": unknown,
        "repeated_file_names": sorted(n for n, ms in names.items() if len(ms) > 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--edges", action="store_true", help="print every import edge")
    ap.add_argument("--root", help="another checkout to measure (default: this one)")
    args = ap.parse_args(argv)
    if args.root:
        global ROOT, PACKAGE
        ROOT = Path(args.root).resolve()
        PACKAGE = ROOT / "qgpu"
    if args.edges:
        found, _ = edges()
        for a, b, line, f in sorted(found):
            print(f"{a}:{line} -> {b}{'  (in function)' if f else ''}")
        return 0
    m = measure()
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    print(f"files {m['files']}, lines {m['lines']}")
    print("largest:", ", ".join(f"{k} {v}" for k, v in m["largest"]))
    print(f"cycles {len(m['cycles'])}:")
    for c in m["cycles"]:
        print("  ", " ".join(c))
    print(f"back arrows {len(m['back_arrows'])}:")
    for b in m["back_arrows"]:
        print("  ", b)
    print(f"imports inside functions {m['function_level_imports']}")
    print(f"file names in more than one package {len(m['repeated_file_names'])}: "
          + ", ".join(m["repeated_file_names"]))
    if m["unplaced_packages"]:
        print("not in the pipeline order:", ", ".join(m["unplaced_packages"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
