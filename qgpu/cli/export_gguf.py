"""cli.export_gguf: `qgpu export-gguf [--model DIR] --out FILE.gguf`: a merged checkpoint
(`qgpu merge`) or the machine alone (`qgpu export-machine`; without --model: the machine
compiled here, no safetensors written on the way) as a GGUF file that llama.cpp
loads as its qwen35 architecture (float32 tensors, the GPU tokens in its vocabulary,
qgpu_merge.json inside: model.gguf). `qgpu run ... --model FILE.gguf --engine llama.cpp`
then runs launches on it."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--model", metavar="DIR",
                        help="checkpoint directory with qgpu_merge.json (default: the "
                             "machine, compiled or from the compile cache)")
    parser.add_argument("--out", required=True, metavar="FILE.gguf", help="the new GGUF file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args) -> int:
    from qgpu.files import check_output, new_output
    from qgpu.progress import progress
    from qgpu.runtime.gguf_export import export_gguf, machine_gguf

    check_output(args.out, (args.model,))
    with new_output(args.out, folder=False) as tmp:  # renamed into place when complete
        if args.model is None:
            r = machine_gguf(tmp, progress=not args.quiet)
        else:
            with progress(desc="export-gguf", unit="tensor", enabled=not args.quiet) as bar:
                r = export_gguf(args.model, tmp, progress=lambda _name: bar.update(1))
    print(f"{args.out}: {r['bytes'] / 2**30:.2f} GiB, {r['layers']} layers, hidden "
          f"{r['hidden']}, vocabulary {r['vocab']} (GPU tokens from {r['gpu_token_offset']})")
    return 0
