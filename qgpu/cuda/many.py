"""cuda.many: many launches in one call, run together where the engine can.

    results = qgpu.cuda.launch_many([(k, grid, block, args), (k2, g2, b2, args2), ...])
    results = k.launch_many(grid, block, [args1, args2, ...])     # one kernel, one shape

Each launch is checked and linked as a call of its kernel would (a bad argument raises
before anything runs), then all go to the engine at once: an engine registered in
BATCH_ENGINES runs them as one job list (the model's: runtime.generate_many, one or two
threads generating launches, `in_flight` per thread), any other one by one. Each
launch's arrays receive its results, as after its own call; the results come back in the
order given. errors="raise" (the default) raises the first failed launch's error (in
launch order) after every launch has run and the others' arrays hold their results (a
launch refused before running, such as a bad argument, raises before any runs);
errors="return" puts each failed or refused launch's error in its place in the list. `options` go
to the batch engine (the model's: in_flight, jobs).

Owns: launching several launches at once and the batch-engine registry. May import:
isa, errors (the kernels come in as objects: cuda.api imports this module, not the
reverse).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from qgpu.errors import LaunchError, QgpuError
from qgpu.isa.faults import Fault

# engine name -> runner(calls, budget, **options) -> one EngineRun or QgpuError per call,
# calls being (program, grid, block, memory) tuples; the runtime registers the model's
BATCH_ENGINES: dict[str, Callable[..., list]] = {}
ERRORS = ("raise", "return")


def _one_by_one(runner, calls: Sequence[tuple], budget) -> list:
    out = []
    for program, grid, block, memory in calls:
        t0 = time.perf_counter()
        try:
            run = runner(program, grid, block, memory, budget)
        except QgpuError as err:
            out.append(err)
            continue
        if run.seconds is None:
            run.seconds = time.perf_counter() - t0
        out.append(run)
    return out


def launch_many(launches: Sequence[tuple], engine: str | None = None,
                budget: int | None = None, shared_mem: int = 0,
                printf_words: int | None = None, errors: str = "raise",
                **options) -> list:
    """Run every launch, `(kernel, grid, block, args)` each, on one engine (`engine`, else
    the kernels' own, which must then agree); see the module doc. Returns a LaunchResult
    (or, with errors="return", the error) per launch, in order."""
    if errors not in ERRORS:
        raise LaunchError(f"errors={errors!r}: give one of {ERRORS}")
    try:
        launches = list(launches)
    except TypeError:
        raise LaunchError(f"launch_many takes a list of (kernel, grid, block, args) tuples, "
                          f"not {type(launches).__name__}") from None
    for i, launch in enumerate(launches):
        if not isinstance(launch, tuple | list) or len(launch) != 4:
            raise LaunchError(f"launch_many: launch {i} is not a (kernel, grid, block, args) "
                              "tuple")
        if not callable(getattr(launch[0], "prepare", None)):
            raise LaunchError(f"launch_many: launch {i}'s kernel is a "
                              f"{type(launch[0]).__name__}, not a kernel (module."
                              "get_function(name) gives one)")
    if engine is None:
        engines = {launch[0].engine for launch in launches}
        if len(engines) > 1:
            raise LaunchError(f"launch_many runs one engine; the kernels' defaults differ "
                              f"({sorted(engines)}): name one with engine=")
        engine = engines.pop() if engines else "interp"
    preps = []
    for kernel, grid, block, args in launches:
        try:
            preps.append(kernel.prepare(grid, block, args, engine, budget, shared_mem,
                                        printf_words))
        except QgpuError as err:  # raised before anything runs, unless returned in place
            if errors == "raise":
                raise
            preps.append(err)
    ready = [p for p in preps if not isinstance(p, QgpuError)]
    calls = [(p.program, p.grid, p.block, p.memory) for p in ready]
    t0 = time.perf_counter()
    batch = BATCH_ENGINES.get(engine)
    if ready and batch is not None:
        runs = iter(batch(calls, ready[0].budget, **options))
    elif ready:
        runs = iter(_one_by_one(ready[0].runner, calls, ready[0].budget))
    wall = time.perf_counter() - t0
    results = []
    for prep in preps:
        if isinstance(prep, QgpuError):
            results.append(prep)
            continue
        run, kernel = next(runs), prep.kernel
        if isinstance(run, QgpuError):
            results.append(kernel.fault_error(prep, run) if isinstance(run, Fault) else run)
            continue
        try:
            results.append(kernel.finish(prep, run, wall if run.seconds is None
                                         else run.seconds))
        except QgpuError as err:
            results.append(err)
    if errors == "raise":
        for result in results:
            if isinstance(result, QgpuError):
                raise result
    return results

