"""qgpu: a 4-lane SIMT GPU compiled into the weights of Qwen3.5 decoder layers.

Pipeline stages, one subpackage each (see README.md, "Architecture"):
isa (machine definition) -> interp (reference interpreter) -> cuda (clang front end and
launch API) -> protocol (tokens) -> circuit (weight compiler) -> model (layer math,
engines, checkpoints) -> runtime (generation loop, --check) -> cli.
"""

__version__ = "0.1.0"


def compile(source: str, **kwargs):  # noqa: A001 - mirrors cupy.RawModule's role
    """Compile CUDA C source into a module of launchable kernels (see qgpu.cuda)."""
    from qgpu.cuda import compile as _compile

    return _compile(source, **kwargs)
