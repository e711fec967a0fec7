"""cli.merge: `qgpu merge --base DIR --out DIR [--circuit NAME]`: compile a circuit at the
base checkpoint's per-layer shapes and write one checkpoint holding both (qgpu.merge,
docs/merge.md): circuit layers in front, GPU tokens appended to the vocabulary and the
tokenizer. Progress goes to stderr."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from qgpu.files import check_output, new_output, read_text_limited
from qgpu.merge import merge_checkpoint
from qgpu.merge.circuits import CIRCUITS, compile_named
from qgpu.merge.layout import NORM_MODES, MergeError, layer_shape_of
from qgpu.merge.merge import LAYOUT_FILE
from qgpu.merge.source import CheckpointSource
from qgpu.merge.tokenizer import GPU_TOKEN_PREFIX

DEFAULT_CIRCUIT = "machine"


def add_arguments(parser) -> None:
    parser.add_argument("--base", required=True, help="base Qwen3.5 checkpoint directory")
    parser.add_argument("--out", required=True, help="output directory (new or empty)")
    parser.add_argument("--circuit", default=DEFAULT_CIRCUIT, choices=sorted(CIRCUITS),
                        help=f"circuit to merge (default {DEFAULT_CIRCUIT})")
    parser.add_argument("--norm-mode", default="exact", choices=NORM_MODES,
                        help="base-norm compensation (exact; ratio/none only to measure)")
    parser.add_argument("--no-neutralise", action="store_true",
                        help="let GPU tokens decay/write the base's GDN state (to measure)")
    parser.add_argument("--shard-gb", type=float, default=4.0, help="shard size in GiB")
    parser.add_argument("--ops", help="comma-separated operations to compile into the machine "
                        "(default: all it supports); whole families are kept, and the merged "
                        "machine refuses programs outside them")
    parser.add_argument("--detect-faults", action="store_true",
                        help="compile the fault detector into the machine (the model writes "
                        "TRAP records for misaligned and out-of-bounds accesses, as "
                        "`qgpu run`'s machine does): 45 layers and hidden 2,133, past the "
                        "2,048 a Qwen3.5-2B base shares; without it a faulting launch on the "
                        "merged model is caught only by --check")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def _check_base(base: Path) -> None:
    """Refusals before the compile and before any weight is written: a base that is not
    Qwen3.5 (named by its own config), a base that is already a qgpu merge (its
    qgpu_merge.json, or GPU token names in its tokenizer), a tokenizer.json that does not
    parse."""
    if (base / LAYOUT_FILE).exists():
        raise MergeError(f"{base} is already a qgpu checkpoint (it has {LAYOUT_FILE}): merge "
                         "into the original base model instead")
    config = base / "config.json"
    if config.is_file():
        try:
            body = json.loads(read_text_limited(config, 1 << 22, "config.json"))
        except ValueError as err:
            raise MergeError(f"{config} is not JSON ({err})") from None
        kind = body.get("model_type") if isinstance(body, dict) else None
        if isinstance(kind, str) and not kind.startswith("qwen3_5"):
            archs = body.get("architectures") or []
            named = f" ({', '.join(map(str, archs))})" if isinstance(archs, list) and archs \
                else ""
            raise MergeError(f"{base} is a {kind} model{named}, not Qwen3.5: qgpu merges "
                             "into Qwen3.5 checkpoints (model_type qwen3_5)")
    tokenizer = base / "tokenizer.json"
    if tokenizer.is_file():
        try:
            body = json.loads(read_text_limited(tokenizer, 1 << 30, "tokenizer.json"))
        except ValueError as err:
            raise MergeError(f"{tokenizer} is broken: not JSON ({err})") from None
        if not isinstance(body, dict) or not isinstance(body.get("model"), dict):
            raise MergeError(f"{tokenizer} is broken: not a tokenizers JSON object "
                             "(no \"model\")")
        added = body.get("added_tokens")
        gpu = next((t.get("content") for t in added if isinstance(t, dict)
                    and str(t.get("content", "")).startswith(GPU_TOKEN_PREFIX)),
                   None) if isinstance(added, list) else None
        if gpu is not None:
            raise MergeError(f"{tokenizer} already has GPU tokens ({gpu}): {base} is a "
                             "qgpu merge; merge into the original base model instead")


def main(args) -> int:
    if not math.isfinite(args.shard_gb) or args.shard_gb <= 0:
        raise MergeError(f"--shard-gb {args.shard_gb}: give a positive number of GiB")
    check_output(args.out, (args.base,), folder=True)
    _check_base(Path(args.base))
    base = CheckpointSource(args.base).config
    spec = None
    if args.ops or args.detect_faults:
        from qgpu.circuit.machine.spec import MachineSpec

        if args.circuit != "machine":
            raise MergeError("--ops and --detect-faults apply to the machine circuit only")
        ops = (tuple(o.strip() for o in args.ops.split(",") if o.strip())
               if args.ops else None)
        try:
            spec = MachineSpec(ops=ops, detect_faults=args.detect_faults)
        except ValueError as err:
            raise MergeError(f"--ops: {err}") from None
    part = compile_named(args.circuit, layer_shape_of(base), progress=not args.quiet,
                         spec=spec)
    with new_output(args.out, folder=True) as tmp:  # renamed into place when complete
        layout = merge_checkpoint(args.base, part, tmp,
                                  shard_bytes=max(1, int(args.shard_gb * 2**30)),
                                  progress=not args.quiet, norm_mode=args.norm_mode,
                                  neutralise=not args.no_neutralise)
    if args.circuit == "machine":
        # the launch plan (the circuit layers and GPU rows, sparse) stored now, once the
        # checkpoint is in place, so that the first `qgpu run --model` maps it instead of
        # reading the circuit layers' dense tensors from the checkpoint
        from qgpu.runtime.checkpoint import load_machine_checkpoint

        if not args.quiet:
            print("qgpu merge: storing the launch plan", file=sys.stderr, flush=True)
        load_machine_checkpoint(args.out)
    print(f"{args.out}: hidden {layout.hidden} ({layout.shared} shared by the "
          f"{layout.base_hidden} base and {layout.circuit_hidden} circuit dims + "
          f"{layout.hidden - layout.shared} flags), {layout.circuit_layers} + "
          f"{layout.base.num_hidden_layers} layers, GPU tokens {layout.gpu_token_offset}.."
          f"{layout.pad_token - 1}, pad {layout.pad_token}")
    return 0
