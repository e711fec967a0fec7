"""cli.validate_gpu: `qgpu validate-gpu`, run the kernel suite on a real NVIDIA GPU and
compare it with the reference interpreter; the command itself is qgpu.validate.command
(`python -m qgpu.validate` runs the same on a machine without the `qgpu` script). Here the
reference also gets a sample of the float fuzzer's programs (fuzz.float_kernels: random
float32 expressions whose interpreter outputs equal their native C build bit for bit), so
that a GPU compares float arithmetic beyond the suite's *_f32 kernels: `--float-fuzz N`
(default 40; 0 for none)."""

from qgpu.validate import command


def add_arguments(parser) -> None:
    command.add_arguments(parser)
    parser.add_argument("--float-fuzz", type=int, default=40, metavar="N",
                        help="float fuzz programs added to the reference (default 40)")
    parser.add_argument("--float-fuzz-seed", type=int, default=27, metavar="S")


def main(args) -> int:
    extra = None
    if args.float_fuzz > 0:
        def extra():
            from qgpu.fuzz.float_kernels import fuzz_reference
            return fuzz_reference(args.float_fuzz, args.float_fuzz_seed)
    return command.main(args, extra)
