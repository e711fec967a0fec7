"""docgen.readme_doc: the generated parts of README.md: the limits a user meets first (from
`isa.limits`), the kernel suite's counts (from `qgpu.suite`) and the vocabulary's size
(from `protocol.vocab`). Sections sit between `<!-- generated:NAME -->` and
`<!-- end:NAME -->`; `python -m qgpu.docgen readme` rewrites them and
tests/docgen/test_readme_doc.py fails when the README differs from what it writes now (a
changed limit or a new suite kernel without the docs regenerated)."""

from __future__ import annotations

from pathlib import Path

from qgpu.docgen.isa_doc import render as render_sections
from qgpu.isa import limits

README = Path(__file__).resolve().parents[2] / "README.md"


def limits_table() -> str:
    words = limits.GLOBAL_WORDS
    rows = [
        ("threads per CTA (block)", f"1..{limits.MAX_THREADS_PER_CTA}",
         "a larger block is refused before any token is fed"),
        ("CTAs per launch (grid)", f"1..{limits.MAX_CTAS}, 1-D/2-D/3-D",
         f"at most {limits.MAX_WARPS} warps in all; more is refused"),
        ("lanes per warp (`warpSize`)", f"{limits.LANES}",
         "shuffles whose constant offset, mask, lane or width assume more lanes are "
         "refused; kernels relying on 32 threads in lockstep are reported as races by the "
         "interpreter"),
        ("registers", f"{limits.REGS - 1} live values per thread ({limits.REGS} with r0 = 0)",
         "a kernel needing more is refused, naming the count"),
        ("global memory", f"{words} words ({words * 4} bytes), arrays and printf buffer "
         "together", "arguments that do not fit are refused before the launch"),
        ("shared memory", f"{limits.SHARED_WORDS} words ({limits.SHARED_WORDS * 4} bytes) "
         "per CTA, static and `extern`", "larger `__shared__` data is refused"),
        ("program ROM", f"{limits.ROM_BLOCKS} blocks of {limits.STAGES} stages",
         "a larger program is refused (float routines take ~40-60 blocks)"),
        ("block budget (interpreter)", f"{limits.DEFAULT_BLOCK_BUDGET:,} blocks",
         "`--budget N`; the model's default is lower (its run time)"),
        ("64-bit", "`long long` exact on register pairs",
         "`long`/`size_t` are 32-bit in qgpu's 32-bit compile: refused in signatures"),
        ("float32", "add/sub/mul/fma/div, compares, conversions: bit-exact on both engines",
         "emulated by integer routines (~900-1,600 tokens per operation and warp); "
         "`sqrtf` on the interpreter only; `double` refused"),
    ]
    out = ["| limit | value | beyond it |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def suite_counts() -> str:
    from qgpu import suite

    specs = suite.load_suite()
    launches = sum(len(s.launches) for s in specs)
    return (f"The kernel suite (`kernels/`, `python -m qgpu.suite`): {len(specs)} kernels, "
            f"{launches} launch configurations, each with an independent numpy oracle.")


def vocab_size() -> str:
    from qgpu.protocol.vocab import VOCAB_SIZE

    return f"The machine's vocabulary: {VOCAB_SIZE:,} GPU tokens (`docs/protocol.md`)."


SECTIONS = {"README.md": {"limits": limits_table, "suite": suite_counts,
                          "vocab": vocab_size}}


def render(text: str) -> str:
    return render_sections("README.md", text, SECTIONS)


def rewrite() -> bool:
    """Rewrite README.md's generated sections; whether it changed."""
    old = README.read_text()
    new = render(old)
    if new != old:
        README.write_text(new)
    return new != old
