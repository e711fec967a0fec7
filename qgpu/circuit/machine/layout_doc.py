"""machine.layout_doc: the generated map of the compiled machine (docs/machine-layers.md):
for every layer, which component's tables its mixer holds (heads) and which component's
units its MLP computes (SwiGLU units), so a reader finds the register file, the memory,
the ROM and decoders, the ALU, the branch unit, the emitter and the scheduler; then the
totals per component. Made from the same plan the emitter used (`compiled.plan`), so it
cannot go stale; `tests/circuit/machine/test_layout_doc.py` checks the checked-in file;
`python -m qgpu.docgen layers` rewrites it (docgen.layers_doc).
"""

from __future__ import annotations

from collections import defaultdict

from qgpu.circuit.ir import MIXER, MLP, Counter, Table, TokenInput, Unit

# (component, what it does, name prefixes of its nodes); the first matching prefix wins.
COMPONENTS = [
    ("token fields", "what the embedding reads off each token", ()),
    ("ROM and decoders", "program rows written from the prompt, fetched at EXEC and "
     "decoded to operation bits, destinations, operand queries, immediates",
     ("rom.", "decode.", "ins.", "imm", "block.restore")),
    ("register file", "per lane 16 x 32-bit registers, written by R records, read "
     "per stage", ("rf",)),
    ("memory", "the global (and shared) memory tables, loads, store and atomic records",
     ("mem.", "load", "store.", "atom", "shared", "smem", "space.")),
    ("ALU", "operands, the low/high MLPs of every operation family per position and lane",
     ("operands", "alu_", "mul", "shift", "minmax", "warp", "shfl", "ballot")),
    ("fault detector", "misaligned and out-of-bounds accesses: the first faulting lane, "
     "its address and the TRAP record's fields (machine.faults); lanes waiting at "
     "different barriers and their lowest and highest block (machine.barriers)",
     ("fault.", "barrier.")),
    ("branch unit", "the branch condition per lane and the taken mask",
     ("cond.", "branch.", "taken.")),
    ("emitter", "result queue and record bookkeeping: which R, V, ADDR, END comes next",
     ("queue", "records", "emit.", "wb.", "rec.", "value_slots")),
    ("scheduler", "lane PCs, running lanes, min-PC, the next EXEC or HALT",
     ("pc", "lanes", "next_exec")),
    ("bookkeeping", "latches of EXEC / launch / record fields, counters, the current block",
     ("latch.", "count", "cur.", "launch.", "present")),
]
OTHER = "other"


def component_of(node) -> str:
    if isinstance(node, TokenInput):
        return COMPONENTS[0][0]
    for name, _, prefixes in COMPONENTS[1:]:
        if node.name.startswith(prefixes):
            return name
    return OTHER


def layout_doc(compiled) -> str:
    plan = compiled.plan
    cfg = compiled.weights.config
    s = plan.shape
    heads = defaultdict(lambda: defaultdict(int))  # layer -> component -> heads
    tables = defaultdict(lambda: defaultdict(list))
    units = defaultdict(lambda: defaultdict(int))
    nodes = defaultdict(lambda: defaultdict(int))
    for L in range(plan.n_layers):
        for node in plan.nodes_at(L, MIXER):
            comp = component_of(node)
            if isinstance(node, (Table, Counter)):
                heads[L][comp] += len(plan.heads[node])
                tables[L][comp].append(node.name)
        for node in plan.nodes_at(L, MLP):
            if isinstance(node, Unit):
                comp = component_of(node)
                units[L][comp] += node.units
                nodes[L][comp] += 1
    name = compiled.circuit.name.rsplit("_", 1)[0]  # without the sources' digest
    lines = [
        f"Machine `{name}` at the layer shape {s.key_heads} key / "
        f"{s.value_heads} value heads of {s.key_dim}x{s.value_dim}, MLP {s.mlp}, conv "
        f"{s.conv}: {plan.n_layers} layers (layer {plan.attention_layer} is the zero "
        f"full-attention layer), hidden size {plan.hidden}, "
        f"{compiled.weights.nonzero_count():,} nonzero weights.", "",
        "| layer | type | mixer: heads by component (tables) | MLP: units by component "
        "(unit nodes) |", "|---|---|---|---|"]
    for L in range(plan.n_layers):
        mix = "; ".join(f"{c} {heads[L][c]} ({_names(tables[L][c])})" for c in heads[L])
        mlp = "; ".join(f"{c} {units[L][c]} ({nodes[L][c]})" for c in units[L])
        lines.append(f"| {L} | {cfg.layer_types[L]} | {mix or '-'} | {mlp or '-'} |")
    lines += ["", "| component | what it does | heads | MLP units |", "|---|---|---|---|"]
    for name, what, _ in COMPONENTS[1:] + [(OTHER, "not classified", ())]:
        h = sum(heads[L][name] for L in heads)
        u = sum(units[L][name] for L in units)
        if h or u:
            lines.append(f"| {name} | {what} | {h} | {u:,} |")
    return "\n".join(lines) + "\n"


def _names(names: list[str]) -> str:
    """Table names with numbered copies folded: rf.s0.l1, rf.s0.l2 -> rf.* x2."""
    groups: dict[str, int] = defaultdict(int)
    for n in names:
        groups[n.split(".")[0] + (".*" if "." in n else "")] += 1
    return ", ".join(f"{g}" + (f" x{k}" if k > 1 else "") for g, k in groups.items())

