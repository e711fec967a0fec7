"""cli.export_machine: `qgpu export-machine --out DIR`: the compiled machine circuit alone
as a Qwen3.5 checkpoint (qgpu.model.checkpoint.save_checkpoint, float32) plus
`qgpu_merge.json` (spec, source digest, memory table location, GPU token offset 0), so
`qgpu run --model DIR` and `qgpu chat --model DIR` (launches only) can run it later."""

from __future__ import annotations

from qgpu.circuit.schedule import LayerShape
from qgpu.files import new_output


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="output directory (new or empty)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def main(args) -> int:
    from qgpu.runtime.checkpoint import export_machine

    with new_output(args.out, folder=True) as tmp:  # renamed into place when complete
        info = export_machine(tmp, LayerShape.qwen35_2b(), progress=not args.quiet)
    print(f"{args.out}: the machine, {info['circuit_layers']} layers, hidden "
          f"{info['hidden']}, {info['gpu_tokens']} tokens")
    return 0
