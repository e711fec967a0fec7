"""qgpu: a 4-lane SIMT GPU compiled into the weights of Qwen3.5 decoder layers.

Pipeline stages, one subpackage each, each importing only the stages below it: the order
is the layers contract in pyproject.toml ([tool.importlinter], which `lint-imports`
checks in ./dev test) and the README's architecture table, from isa (the machine's
definition) up to cli.
"""

__version__ = "0.1.0"


def compile(source, filename: str = "kernel.cu",  # noqa: A001 - cupy.RawModule's role
            engine: str = "model", include_dirs=()):
    """Compile CUDA C source into a module of launchable kernels (qgpu.cuda.compile), with
    the model's launch engines registered. Its kernels launch on the compiled model unless
    `engine` (here, or in a call) names another: "interp" (the reference interpreter),
    "model-check", "model-forced". `source` is text or bytes; `include_dirs` are searched
    for #include files besides the folder of `filename`."""
    import qgpu.runtime  # noqa: F401 - registers the model's engines (loaded on first use)
    from qgpu.cuda import compile as compile_cuda

    return compile_cuda(source, filename=filename, engine=engine, include_dirs=include_dirs)
