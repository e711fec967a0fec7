"""qgpu: a 4-lane SIMT GPU compiled into the weights of Qwen3.5 decoder layers.

Pipeline stages, one subpackage each, each importing only those before it (README.md,
"Architecture"; `lint-imports` checks it): isa (machine definition) -> interp (reference
interpreter) -> protocol (tokens) -> cuda (clang front end and launch API) -> model
(layer math, engines, checkpoints) -> primitives (exact weight primitives) -> circuit
(weight compiler, the machine circuit) -> examples -> merge -> runtime (launches on the
model, --check) -> suite -> analysis -> validate -> fuzz -> chat -> docgen -> cli.
"""

__version__ = "0.1.0"


def compile(source: str, **kwargs):  # noqa: A001 - mirrors cupy.RawModule's role
    """Compile CUDA C source into a module of launchable kernels (qgpu.cuda.compile), with
    the model's launch engines registered (engine="model", "model-check", "model-forced")."""
    import qgpu.runtime  # noqa: F401 - registers the model's engines (loaded on first use)
    from qgpu.cuda import compile as compile_cuda

    return compile_cuda(source, **kwargs)
