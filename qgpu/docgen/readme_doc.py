"""docgen.readme_doc: the generated sections of README.md, between
`<!-- docgen:NAME -->` and `<!-- /docgen:NAME -->` markers:

- limits: the machine's limits (`isa.limits`), what the front end refuses and what it emulates;
- suite: the kernel suite's kernels and launches (`qgpu.suite.load_suite`);
- machine: the compiled machine's layers, width and nonzeros (`merge.size`'s constants,
  which tests/circuit/machine/test_layout_doc.py keeps equal to the compiled machine's) and
  the vocabulary (`protocol.vocab`);
- performance: the benchmark results in benchmarks/results/*.json (each written by its
  benchmark through benchmarks/results.py), with their date, load and machine.

`python -m qgpu.docgen readme` rewrites them; tests/docgen/test_readme_doc.py fails when the
committed README differs from what this module writes now."""

from __future__ import annotations

import json
import re
from pathlib import Path

from qgpu.isa import limits
from qgpu.isa.program import GROUP_THREADS
from qgpu.merge.size import MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS
from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"


def limits_table() -> str:
    L = limits
    rows = [
        ("threads per CTA (block)", f"1..{L.MAX_THREADS_PER_CTA:,}",
         f"1..{L.MODEL_MAX_THREADS_PER_CTA}", "refused (LaunchError)"),
        ("CTAs per launch (grid)", f"1..{L.MAX_CTAS:,}, one after another",
         f"1..{L.MODEL_MAX_CTAS}", "refused"),
        ("warps per launch, all CTAs", "no limit of its own",
         f"{L.MODEL_MAX_WARPS}", "refused"),
        ("lanes per machine warp", f"{L.LANES}", f"{L.LANES}",
         f"CUDA's `warpSize` is {GROUP_THREADS}: a CUDA warp is {GROUP_THREADS // L.LANES} "
         f"machine warps, its shuffles and votes lowered through shared memory and the "
         f"group barrier (docs/cuda.md, \"Warp operations\"); code relying on 32 threads "
         f"in lockstep without __syncwarp is reported as a shared-memory race by the "
         f"interpreter"),
        ("registers per lane", f"{L.REGS} ({L.REGS - 1} usable, r0 reads zero)",
         f"{L.REGS}", "a kernel needing more live registers spills values to local memory"),
        ("local memory per thread", f"{L.LOCAL_WORDS} words (register spills)", "none",
         "a kernel with spills runs on the interpreter; the model refuses it by name"),
        ("global memory", f"{L.GLOBAL_WORDS:,} words of {L.WORD_BITS} bits",
         f"{L.MODEL_GLOBAL_WORDS} words",
         "arrays past it refused; an out-of-bounds access faults (`TRAP`)"),
        ("shared memory per CTA", f"{L.SHARED_WORDS:,} words",
         f"{L.MODEL_SHARED_WORDS} words", "refused"),
        ("program ROM", f"{L.ROM_BLOCKS:,} blocks of {L.STAGES} stages",
         f"{L.MODEL_ROM_BLOCKS} blocks", "refused"),
        ("memory writes per block", f"{L.MAX_BLOCK_WRITES}", f"{L.MAX_BLOCK_WRITES}",
         "blocks are packed within it"),
        ("blocks executed per launch", f"{L.DEFAULT_BLOCK_BUDGET:,} or {L.BUDGET_PER_WARP:,} "
         "per warp, whichever is more (interpreter default, `--budget`)",
         "`--budget`", "the launch ends as runaway"),
        ("emulated", "`float` (binary32), `/` and `%`, 16-bit and 8-bit values, `long long`",
         "the same", "integer code on the model, bit-exact (`sqrtf`: interpreter only, "
         "refused by name on the model)"),
        ("refused", "`double`, `long`/`size_t`, fast-math float, 64-bit atomics and division, "
         "`__half`, textures, streams, dynamic parallelism", "the same",
         "an error naming file:line"),
    ]
    out = ["| limit | the ISA (interpreter) | the compiled model (v5) | beyond it |",
           "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(out)


def suite_sentence() -> str:
    from qgpu.suite import load_suite

    specs = load_suite()
    launches = sum(len(spec.launches) for spec in specs)
    return (f"The kernel suite (`kernels/`): {len(specs)} CUDA kernels with {launches} launch "
            f"configurations, each with an independent numpy oracle.")


def machine_sentence() -> str:
    return (f"The machine as merged into a 2B base: {MACHINE_LAYERS} layers, hidden "
            f"{MACHINE_HIDDEN:,}, {MACHINE_NONZEROS / 1e6:.2f} M nonzero weights; vocabulary "
            f"{VOCAB_SIZE:,} GPU tokens (protocol v{PROTOCOL_VERSION}).")


def load_results(directory: Path = RESULTS) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def performance_table(directory: Path = RESULTS) -> str:
    out = ["| what | figure | load | date, source | how |", "|---|---|---|---|---|"]
    for result in load_results(directory):
        load = result.get("load")
        load_text = "-" if not load else "-".join(f"{x:g}" for x in sorted(set(load)))
        when = f"{result['date']}, {result.get('source', 'measured')}"
        for row in result["rows"]:
            out.append(f"| {row['what']} | {row['figure']} | {load_text} | {when} | "
                       f"{row['how']} |")
    return "\n".join(out)


SECTIONS = {"limits": limits_table, "suite": suite_sentence, "machine": machine_sentence,
            "performance": performance_table}


def render(text: str, sections: dict | None = None) -> str:
    """README `text` with every generated section rewritten."""
    for name, fn in (sections or SECTIONS).items():
        pattern = re.compile(rf"(<!-- docgen:{name} -->\n).*?(<!-- /docgen:{name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"README.md lacks the markers of section '{name}'")
        text = pattern.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def rewrite(path: Path = README) -> bool:
    """Rewrite README.md's generated sections; True when it changed."""
    old = path.read_text()
    new = render(old)
    if new != old:
        path.write_text(new)
    return new != old
