"""cli.validate_gpu: `qgpu validate-gpu`, run the kernel suite on a real NVIDIA GPU and
compare it with the reference interpreter; the command itself is qgpu.validate.command
(`python -m qgpu.validate` runs the same on a machine without the `qgpu` script)."""

from qgpu.validate.command import add_arguments, main

__all__ = ["add_arguments", "main"]
