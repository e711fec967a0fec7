"""validate.engines (the GPU script for transformers-CUDA and vLLM) on this CPU: what it
can do without a GPU. The suite's launches come shortest first, and the final memory
replayed from a trace's memory records (what the vLLM check uses: a server's state is
out of reach) equals the interpreter's for every launch."""

from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.protocol import expected_trace
from qgpu.suite import load_suite, model_sized
from qgpu.validate.engines import memory_from_records, suite_launches


def test_memory_from_records_is_the_interpreters_final_memory():
    launches = suite_launches()
    assert len(launches) == sum(model_sized(spec, launch) for spec in load_suite()
                                for launch in spec.launches)
    lengths = []
    for _case, program, grid, block, memory in launches:
        res = run_launch(program, grid=grid, block=block, memory=list(memory) or None,
                         sizes=limits.MODEL_MEMORY)
        trace = expected_trace(res.events)
        lengths.append(len(trace))
        assert memory_from_records(program, grid, block, memory, trace) == list(res.memory)
    assert lengths == sorted(lengths)
    assert [c[0] for c in suite_launches(3)] == [c[0] for c in launches[:3]]
