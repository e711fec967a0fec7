"""Where the machine's residual width goes: the live width at every stage of the compiled
plan (no weights are emitted: the circuit is built and scheduled, ~30 s, < 1 GiB), and at
the widest stage (or --stage S) the live signals by family (digits replaced by #) with
their dims and (born, cancelled) stages; --curve adds the layers / width trade (the
narrowest plan the scheduler finds for each layer count up to --max-layers).

    python benchmarks/machine_width.py [--detect-faults] [--max-layers N] [--stage S] [--top 30]
        [--curve]

Stages: the embedding is 0, layer L's mixer 2L + 1 and its MLP 2L + 2; a piece is live
at stage s when it was born before s and is cancelled at s or later (`Plan.live_at`).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

from qgpu.circuit.machine.build import build_machine, max_layers
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.placement import graph, place
from qgpu.circuit.schedule import SWEEP, WIDE_SWEEP, LayerShape, _allocate, _layers, schedule


def width_curve(circuit, shape: LayerShape) -> dict[int, int]:
    """{layers: the narrowest hidden size any scheduler setting reached with them}."""
    g = graph(circuit)
    best: dict[int, int] = {}
    for extra, slack, score, oldest in SWEEP + WIDE_SWEEP:
        placed = place(g, shape, shape.mlp - 1, True, g.asap_layers + extra, slack, score,
                       oldest=oldest)
        n, _ = _layers(g, placed)
        hidden = max(d + 1 for ds in _allocate(g, placed, n).values() for d in ds)
        best[n] = min(best.get(n, hidden), hidden)
    return dict(sorted(best.items()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--detect-faults", action="store_true",
                   help="the machine with the fault detector (runtime.compiled's DEFAULT_SPEC)")
    p.add_argument("--max-layers", type=int, help="default: build.max_layers(spec)")
    p.add_argument("--stage", type=int, help="the stage to break down (default: widest)")
    p.add_argument("--top", type=int, default=30, help="families listed")
    p.add_argument("--curve", action="store_true", help="also the layers / width trade")
    args = p.parse_args(argv)
    spec = MachineSpec(detect_faults=args.detect_faults)
    args.max_layers = args.max_layers or max_layers(spec)
    circuit, shape = build_machine(spec), LayerShape.qwen35_2b()
    plan = schedule(circuit, shape, max_layers=args.max_layers)
    print(f"layers {plan.n_layers}, hidden {plan.hidden} (max_layers {args.max_layers})")
    gone = {piece: 2 * layer + 2 for layer, pieces in plan.cancels.items() for piece in pieces}
    widths = {s: sum(len(piece) for piece in plan.live_at(s))
              for s in range(1, 2 * plan.n_layers + 1)}
    for layer in range(plan.n_layers):
        print(f"layer {layer:2d}: mixer out {widths[2 * layer + 1]:5d}  "
              f"MLP out {widths[2 * layer + 2]:5d}")
    stage = args.stage if args.stage is not None else max(widths, key=widths.get)
    families: dict[str, list] = defaultdict(lambda: [0, set()])
    for piece in plan.live_at(stage):
        entry = families[re.sub(r"\d+", "#", piece.signal.name)]
        entry[0] += len(piece)
        entry[1].add((plan.birth[piece.signal], gone.get(piece, "end")))
    print(f"stage {stage}: {widths[stage]} live dims")
    for name, (dims, spans) in sorted(families.items(), key=lambda kv: -kv[1][0])[:args.top]:
        shown = ", ".join(f"{b}-{e}" for b, e in sorted(spans, key=str)[:4])
        print(f"{dims:6d}  {name:30s} {len(spans)} piece(s), stages {shown}")
    if args.curve:
        print("layers / narrowest hidden:", ", ".join(
            f"{n}: {h}" for n, h in width_curve(circuit, shape).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
