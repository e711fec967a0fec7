"""cli.merge: `qgpu merge --base DIR --out DIR [--circuit NAME]`: compile a circuit at the
base checkpoint's per-layer shapes and write one checkpoint holding both (qgpu.merge,
docs/merge.md): circuit layers in front, GPU tokens appended to the vocabulary and the
tokenizer. Progress goes to stderr."""

from __future__ import annotations

from qgpu.merge import merge_checkpoint
from qgpu.merge.circuits import CIRCUITS, compile_named
from qgpu.merge.layout import NORM_MODES, MergeError, layer_shape_of
from qgpu.merge.source import CheckpointSource

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


def main(args) -> int:
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
    layout = merge_checkpoint(args.base, part, args.out, shard_bytes=int(args.shard_gb * 2**30),
                              progress=not args.quiet, norm_mode=args.norm_mode,
                              neutralise=not args.no_neutralise)
    print(f"{args.out}: hidden {layout.hidden} ({layout.shared} shared by the "
          f"{layout.base_hidden} base and {layout.circuit_hidden} circuit dims + "
          f"{layout.hidden - layout.shared} flags), {layout.circuit_layers} + "
          f"{layout.base.num_hidden_layers} layers, GPU tokens {layout.gpu_token_offset}.."
          f"{layout.pad_token - 1}, pad {layout.pad_token}")
    return 0
