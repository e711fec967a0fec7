"""cli.export_gguf: `qgpu export-gguf [--model DIR] --out FILE.gguf [--types exact|f32]`:
a merged checkpoint (`qgpu merge`) or the machine alone (`qgpu export-machine`; without
--model: the machine compiled here, no safetensors written on the way) as a GGUF file that
llama.cpp loads as its qwen35 architecture (each tensor in the smallest type that keeps it
exact in llama.cpp: model.gguf_types; the GPU tokens in its vocabulary, qgpu_merge.json
inside). `qgpu run ... --model FILE.gguf --engine llama.cpp` then runs launches on it."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--model", metavar="DIR",
                        help="checkpoint directory with qgpu_merge.json (default: the "
                             "machine, compiled or from the compile cache)")
    parser.add_argument("--out", required=True, metavar="FILE.gguf", help="the new GGUF file")
    parser.add_argument("--types", choices=("exact", "f32"), default="exact",
                        help="exact (default): the base's bfloat16 tensors stay BF16, the "
                             "circuit's table projections F16, the rest float32 (every "
                             "launch exact); f32: float32 throughout")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args) -> int:
    from qgpu.files import check_output, new_output
    from qgpu.progress import progress
    from qgpu.runtime.gguf_export import export_gguf, machine_gguf

    check_output(args.out, (args.model,))
    with new_output(args.out, folder=False) as tmp:  # renamed into place when complete
        if args.model is None:
            r = machine_gguf(tmp, progress=not args.quiet, policy=args.types)
        else:
            with progress(desc="export-gguf", unit="tensor", enabled=not args.quiet) as bar:
                r = export_gguf(args.model, tmp, progress=lambda _name: bar.update(1),
                                policy=args.types)
    kinds = ", ".join(f"{n} {k}" for k, n in r.get("types", {}).items())
    print(f"{args.out}: {r['bytes'] / 2**30:.2f} GiB, {r['layers']} layers, hidden "
          f"{r['hidden']}, vocabulary {r['vocab']} (GPU tokens from {r['gpu_token_offset']})"
          + (f"; tensors: {kinds}" if kinds else ""))
    return 0
