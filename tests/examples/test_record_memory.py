"""examples.record_memory: memory through records (docs/scale-design.md, 3.2). Stores and
loads over several tables (each valid for its own high address bits), words never stored,
overwrites; every answer equal to the oracle on the reference engine's recurrent and
chunked paths and on the fast engine; at the 2B shape 4,096 words take 32 heads plus
the two one-row latches."""

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DemoError
from qgpu.examples.record_memory import (
    build_record_memory,
    expected_answers,
    load,
    rows_per_table,
    store,
)
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine

SHAPE = LayerShape.small(heads=4, head_dim=128, mlp=512)   # 512 words a table
WORDS = 1300                                               # three tables, the last partial


def written(v, words, records, seed):
    """A stream as greedy generation writes it: each load followed by its two answers."""
    rng = np.random.default_rng(seed)
    tokens = []
    for _ in range(records):
        address = int(rng.integers(0, words))
        if rng.random() < 0.5:
            tokens += store(v, address, int(rng.integers(0, 2 ** 32)))
        else:
            tokens.append(load(v, address, 0)[0])
            tokens += expected_answers(v, tokens)[-1:]
            tokens += expected_answers(v, tokens)[-1:]
    return tokens


@pytest.fixture(scope="module")
def small():
    circuit, v = build_record_memory(WORDS, SHAPE)
    return compile_circuit(circuit, SHAPE, cache=False), v


def test_the_oracle_reads_back_stores_and_zero_for_words_never_stored():
    _, v = build_record_memory(8, SHAPE)
    tokens = store(v, 3, 0xDEADBEEF) + load(v, 3, 0xDEADBEEF) + load(v, 5, 0)
    answers = expected_answers(v, tokens)
    assert answers[3:6] == [v.id("V", 0xBEEF), v.id("V", 0xDEAD), v.id("DONE")]
    assert answers[6:8] == [v.id("V", 0), v.id("V", 0)]


@pytest.mark.parametrize("mode", ["recurrent", "chunked"])
def test_loads_answer_the_last_store_on_both_transformers_paths(small, mode):
    comp, v = small
    top = WORDS - 1
    tokens = (load(v, top, 0) + store(v, top, 0x12345678) + load(v, top, 0x12345678)
              + store(v, top, 7) + load(v, top, 7) + store(v, 0, 0xFFFFFFFF)
              + load(v, 0, 0xFFFFFFFF) + written(v, WORDS, 120, seed=5))
    engine = ReferenceEngine(comp.weights)
    logits = engine.prefill(engine.new_state(), tokens, mode=mode)
    assert logits.argmax(1).tolist() == expected_answers(v, tokens)


def test_loads_on_the_fast_engine(small):
    comp, v = small
    tokens = written(v, WORDS, 600, seed=9)
    engine = FastEngine(comp.weights)
    assert engine.forced_greedy(engine.new_state(), tokens) == expected_answers(v, tokens)


def test_4096_words_at_the_2b_shape_take_32_heads_and_stay_exact():
    shape = LayerShape.qwen35_2b()
    assert rows_per_table(shape) == 2048
    circuit, v = build_record_memory(4096, shape)
    comp = compile_circuit(circuit, shape, cache=False)
    assert sum(comp.plan.heads_used) == 32 + 2          # two tables of 16 heads, two latches
    tokens = written(v, 4096, 400, seed=2)
    engine = FastEngine(comp.weights)
    assert engine.forced_greedy(engine.new_state(), tokens) == expected_answers(v, tokens)


def test_a_memory_beyond_16_bit_addresses_is_refused():
    with pytest.raises(DemoError, match="16-bit addresses"):
        build_record_memory(2 ** 16 + 1, SHAPE)
