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


def launch_many(launches, engine: str | None = None, **options):
    """Many launches at once, `(kernel, grid, block, args)` each (qgpu.cuda.launch_many):
    on the model runtime.generate_many runs them (`jobs=1` or 2 threads, each with
    `in_flight` launches, default 1, stepped in turn; model.fast.MULTI_FROM for the
    batched step); each launch's
    arrays receive its results. `kernel.launch_many(grid, block, [args, ...])` does the
    same for one kernel and shape."""
    import qgpu.runtime  # noqa: F401 - registers the model's engines (loaded on first use)
    from qgpu.cuda import launch_many as launch_many_cuda

    return launch_many_cuda(launches, engine=engine, **options)
