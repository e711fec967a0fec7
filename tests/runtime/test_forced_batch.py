"""The batched teacher-forced kernel on the compiled machine (what `--check --forced`,
the fuzz campaigns and benchmarks/bench_batched_check.py run): on suite launches, one
and several warps, the batched pass over prompt + trace gives the per-token kernel's
greedy tokens, residual streams and states bit for bit, and its greedy tokens are the
interpreter's trace."""

import numpy as np
import pytest

from qgpu import suite
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.runtime.compiled import load_machine

pytestmark = pytest.mark.slow

CASES = ["vec_add", "reverse", "dot", "atomic_exch_conservation", "saxpy", "histogram"]


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


def _launches():
    for spec in suite.load_suite():
        if spec.name not in CASES:
            continue
        for launch in spec.launches[:2]:
            yield spec, launch


def _forced(engine, tokens, chunk, batched):
    """(greedy tokens, residual streams after the last layer, state) of a forced pass."""
    state = engine.new_state()
    hidden, greedy = [], []
    for a in range(0, len(tokens), chunk):
        part = np.asarray(tokens[a:a + chunk])
        h = np.zeros((len(part), engine.config.hidden_size), np.float32)
        greedy += engine.plan.run_forced(state, part, batched, h).tolist()
        state.position += len(part)
        hidden.append(h)
    return greedy, np.concatenate(hidden), state


def test_batched_equals_per_token_on_suite_launches(machine):
    engine = machine.engine
    checked, warps = 0, set()
    for spec, launch in _launches():
        function = suite.compiled_module(spec.source).get_function(spec.kernel)
        grid, block = launch["grid"], launch["block"]
        program, memory, _, _ = function.link(grid, block,
                                              suite.positional_args(spec, launch["args"]))
        want = expected_trace(run_launch(program, grid, block, memory=list(memory)).events)
        prompt = encode_prompt(program, grid, block, memory)
        if len(prompt) + len(want) > 2500:
            continue
        tokens = prompt + want[:-1]
        one = _forced(engine, tokens, len(tokens), False)
        many = _forced(engine, tokens, 256, True)
        assert one[0] == many[0], spec.name
        assert one[0][len(prompt) - 1:] == want, spec.name
        assert one[1].tobytes() == many[1].tobytes(), spec.name
        for i in one[2].recurrent:
            assert one[2].recurrent[i].tobytes() == many[2].recurrent[i].tobytes()
            assert one[2].conv[i].tobytes() == many[2].conv[i].tobytes()
        checked += 1
        warps.add(limits.launch_warps(grid, block))
    assert checked >= 4 and len(warps) >= 2
