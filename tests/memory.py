"""Releasing what a test process holds: the machines qgpu keeps per process (a compiled
machine with its engine is a few GiB), the merge tests' merged models, and the heap."""

import ctypes
import gc


def release_memory(keep_default_machine: bool = True) -> None:
    """Drop the per-process machine caches (qgpu's and the merge tests') and trim the
    heap."""
    from qgpu.analysis.suite_margins import release_margin_machines
    from qgpu.runtime.compiled import release_machines
    from tests.merge import machine_helpers

    release_machines(keep_default=keep_default_machine)
    release_margin_machines()
    machine_helpers.merged_machine.cache_clear()
    machine_helpers.machine_part.cache_clear()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: the allocator keeps its pages
        pass
