"""docgen.circuit_doc: the generated description of a compiled circuit (docs/circuit.md),
made from the same plan the emitter used, so it cannot go stale: per layer, which heads
read and write which table, which MLP units compute what, which signals are cancelled,
and which signals are live; then the signals and the output rules.

`python -m qgpu.docgen circuit` rewrites the generated section of docs/circuit.md
(between `<!-- generated:circuits -->` and `<!-- end:circuits -->`).
"""

from __future__ import annotations

import re
from pathlib import Path

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import MIXER, MLP, Counter, Table, Unit, bits_per_head
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS

DOC = Path(__file__).resolve().parents[2] / "docs" / "circuit.md"
BEGIN, END = "<!-- generated:circuits -->", "<!-- end:circuits -->"


def _ref(ref) -> str:
    if ref is None:
        return "-"
    if isinstance(ref, int):
        return f"row {ref}"
    return f"`{ref.describe()}`"


def _lags(lags) -> str:
    return "" if tuple(lags) == (0,) else f" (lag {', '.join(map(str, lags))})"


def _table_rows(plan, node: Table) -> list[str]:
    dv = plan.shape.value_dim
    segs = node.segments(dv)
    w = node.write_port
    value = ", ".join(f"`{r.describe()}`{_lags([lag])}" for r, lag in w.value)
    extra = [f"key {_ref(w.key)}{_lags([w.key_lag])}", f"value {value}"]
    if w.enable is not None:
        extra.append(f"enable {_ref(w.enable)}")
    if w.clear is not None:
        extra.append(f"clear {_ref(w.clear)}")
    if node.presence:
        extra.append("presence bit")
    rows = [f"- table `{node.name}`: {node.rows} rows x {node.width} bits; write: "
            + "; ".join(extra)]
    per = bits_per_head(dv)
    banks = node.banks(plan.shape.key_dim)
    for r, read in enumerate(node.reads):
        for s in range(segs):
            head = plan.heads[node][r * segs * banks + s * banks]
            lo, hi = s * per, min((s + 1) * per, node.stored_bits)
            gate = f", gate {_ref(read.gate)}" if read.gate is not None else ""
            rows.append(f"  - key head {head}{f' (+{banks - 1} banks)' if banks > 1 else ''}"
                        f": copy {r}, stored bits {lo}..{hi - 1}; read "
                        f"{_ref(read.query)}{_lags(read.query_lags)}{gate} -> "
                        f"`{read.raw.name}`")
    return rows


def _counter_rows(plan, node: Counter) -> list[str]:
    return [f"- counter `{node.name}` (key head {plan.heads[node][0]}): reset "
            f"{_ref(node.reset)}, tick {_ref(node.tick)} -> `{node.outputs[0].name}` "
            f"(2^-14 * 2^-n)"]


def _unit_row(node: Unit) -> str:
    args = ", ".join(_ref(a) for a in node.args)
    outs = ", ".join(f"`{s.name}`" for s in node.outputs)
    return f"- {node.op} `{node.name}` ({node.units} units): {args} -> {outs}"


def _piece(ref) -> str:
    """A piece of a signal: its name when whole, else its offsets (a range when
    consecutive)."""
    offs = ref.offsets
    if len(offs) == ref.signal.width:
        return ref.signal.name
    if offs == tuple(range(offs[0], offs[-1] + 1)):
        return ref.describe()
    return f"{ref.signal.name}[{','.join(map(str, offs))}]"


def _signal_table(plan) -> list[str]:
    rows = ["| signal | encoding | width | dims | made at | last read |",
            "|---|---|---|---|---|---|"]

    def where(s):
        if s == 0:
            return "embedding"
        return f"layer {(s - 1) // 2} {'mixer' if s % 2 else 'MLP'}"
    for sig, dims in plan.dims.items():
        last = plan.last_use[sig]
        last_txt = "output" if last >= 10 ** 9 else where(last)
        span = f"{dims[0]}" if len(dims) == 1 else f"{dims[0]}..{dims[-1]}"
        if dims != list(range(dims[0], dims[-1] + 1)):
            span = ",".join(map(str, dims))
        rows.append(f"| `{sig.name}` | {sig.kind} | {sig.width} | {span} | "
                    f"{where(plan.birth[sig])} | {last_txt} |")
    return rows


def circuit_doc(compiled) -> str:
    plan, c = compiled.plan, compiled.circuit
    s, cfg = plan.shape, compiled.weights.config
    used = sum(len(d) for d in plan.dims.values())
    lines = [
        f"### Circuit `{c.name}`", "",
        f"Layer shape: {s.key_heads} key / {s.value_heads} value heads of "
        f"{s.key_dim}x{s.value_dim}, MLP {s.mlp}, conv {s.conv}. Vocabulary {c.vocab_size}. "
        f"Hidden size {plan.hidden} (dim 0 the constant one, dims 1-4 ballast, "
        f"{plan.hidden - 5} signal dims holding {used} signal slots"
        f"{' with reuse' if plan.reuse_dims else ''}); mean square {plan.mean}. "
        f"{plan.n_layers} layers, layer {plan.attention_layer} is the zero full-attention "
        f"layer. {compiled.weights.nonzero_count()} nonzero weights.", ""]
    for L in range(plan.n_layers):
        lines.append(f"#### Layer {L} ({cfg.layer_types[L]})")
        mixer = plan.nodes_at(L, MIXER)
        lines.append(f"Mixer: {plan.heads_used[L]} of {s.key_heads} key heads.")
        for node in mixer:
            lines += _table_rows(plan, node) if isinstance(node, Table) else \
                _counter_rows(plan, node)
        lines.append(f"\nMLP: {plan.units[L]} of {s.mlp} units (+1 for the norm ledger); "
                     f"sum of squares after it {plan.sumsq_after[L]}.")
        lines += [_unit_row(n) for n in plan.nodes_at(L, MLP)]
        gone = plan.cancels.get(L, [])
        if gone:
            lines.append("- cancelled (dims freed): " + ", ".join(f"`{_piece(g)}`" for g in gone))
        live = plan.live_at(2 * L + 1)
        lines.append("\nLive at the layer's input: "
                     + (", ".join(f"`{_piece(x)}`" for x in live) or "-") + "\n")
    lines += ["#### Signals", ""] + _signal_table(plan) + ["", "#### Outputs", ""]
    for rule in c.rules:
        toks = rule.tokens
        span = f"tokens {toks[0]}..{toks[-1]}" if len(toks) > 1 else f"token {toks[0]}"
        src = f" from {_ref(rule.source)}" if rule.source is not None else ""
        when = f" when {_ref(rule.when)}" if rule.when is not None else " always"
        lines.append(f"- {rule.kind}: {span}{src}{when}")
    if c.default_token is not None:
        lines.append(f"- default: token {c.default_token}")
    return "\n".join(lines) + "\n"


def generated_section() -> str:
    """The demo circuits at the small layer shape (compiled afresh, nothing cached)."""
    parts = []
    for build in DEMOS.values():
        parts.append(circuit_doc(compile_circuit(build().circuit, LayerShape.small(), cache=False)))
    return "\n".join(parts)


def rewrite(path: Path = DOC) -> bool:
    """Rewrite the generated section; True when the file changed."""
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path} has no {BEGIN} ... {END} section")
    new = pattern.sub(lambda _: f"{BEGIN}\n{generated_section()}{END}", text)
    if new != text:
        path.write_text(new)
    return new != text

