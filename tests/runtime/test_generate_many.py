"""Many launches generated together on the compiled machine (runtime.generate_many: the
launches in flight stepped one by one or by one call of the batched kernel, joining and
leaving the batch) write what each writes alone (generate_launch): every trace token, the
memory read back from the model's state, and the same error for a launch that fails,
whatever the batch size and with two jobs."""

import pytest

from qgpu.errors import QgpuError
from qgpu.isa.asm import assemble
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from qgpu.runtime.generate_many import LaunchJob, generate_many
from tests.runtime.programs import MEMORY_PROGRAMS, PROGRAMS

MEMORY = [(7 * a + 3) * (-1) ** a & 0xFFFFFFFF for a in range(20)]


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


def launches() -> list[LaunchJob]:
    """Launches of different lengths (one refused: 8 warps)."""
    jobs = [LaunchJob(assemble(PROGRAMS[name]), 1, block)
            for name in sorted(PROGRAMS)[:4] for block in (4, 2)]
    jobs += [LaunchJob(assemble(MEMORY_PROGRAMS[name]), 1, 4, MEMORY)
             for name in sorted(MEMORY_PROGRAMS)[:2]]
    jobs.insert(3, LaunchJob(assemble("block 0:\n  exit\n"), 2, 16))
    return jobs


@pytest.fixture(scope="module")
def work(machine):
    """The launches and each one's run alone, without and with a budget of 3 blocks."""
    jobs = launches()
    return jobs, {limit: [alone(machine, job, **({} if limit is None else
                                                  {"max_blocks": limit})) for job in jobs]
                  for limit in (None, 3)}


def alone(machine, job: LaunchJob, **limits):
    try:
        return generate_launch(machine, job.program, job.grid, job.block, job.memory,
                               **limits)
    except QgpuError as err:
        return err


def same(a, b) -> bool:
    if isinstance(a, QgpuError) or isinstance(b, QgpuError):
        return type(a) is type(b) and str(a) == str(b)
    return a.trace == b.trace and a.memory == b.memory and a.prompt == b.prompt


@pytest.mark.parametrize("in_flight,jobs,max_blocks,batched", [
    (64, 1, None, True), (3, 1, None, True), (4, 2, 3, True), (1, 2, None, False),
    (64, 1, 3, False)])
def test_many_launches_equal_each_alone(machine, work, in_flight, jobs, max_blocks, batched):
    """batched: steps of 2 or more launches on the batched kernel (engine.multi_from),
    else one by one (the default)."""
    jobs_, alone_runs = work
    limits = {} if max_blocks is None else {"max_blocks": max_blocks}
    want = alone_runs[max_blocks]
    assert sum(isinstance(w, QgpuError) for w in want) >= (1 if max_blocks is None else 3)
    seen = []
    if batched:
        machine.engine.multi_from = 2
    try:
        got = generate_many(machine, jobs_, in_flight=in_flight, jobs=jobs,
                            on_result=lambda i, r: seen.append(i), **limits)
    finally:
        vars(machine.engine).pop("multi_from", None)   # the class's default again
    assert sorted(seen) == list(range(len(jobs_)))
    assert all(same(a, b) for a, b in zip(got, want, strict=True))
    assert all(r.state is None for r in got if not isinstance(r, QgpuError))
