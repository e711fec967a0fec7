"""TextEngine: a merged checkpoint's text half gives the base's own greedy ids in the same
engine, holding the base's bf16 matrices bf16 (memory-mapped) and the head's text rows
narrowed exactly; Bf16Matrix products are the same bits on any thread count."""

import numpy as np
import pytest

from qgpu.merge import merge_checkpoint
from qgpu.model.bf16 import Bf16Matrix, load_lib, narrow_exact, widen
from qgpu.model.checkpoint import CheckpointError, load_checkpoint
from qgpu.model.reference import ReferenceEngine
from qgpu.model.text_engine import TextEngine
from qgpu.model.weights import EMBED, LM_HEAD
from tests.merge.helpers import demo_circuit, random_base, write_release_layout

PROMPT = [5, 17, 3, 99, 42, 7]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("text_engine")
    (root / "base").mkdir()
    write_release_layout(root / "base", random_base("h96_untied", seed=4))  # bf16
    _, part = demo_circuit("adder")
    merge_checkpoint(root / "base", part, root / "merged", shard_bytes=1 << 20)
    return root


def test_merged_text_is_the_bases_greedy_text_in_the_same_engine(dirs):
    base = TextEngine.from_directory(dirs / "base")
    merged = TextEngine.from_directory(dirs / "merged")
    assert merged.config.num_hidden_layers == base.config.num_hidden_layers  # circuit skipped
    assert merged.config.vocab_size == base.config.vocab_size == 150  # text rows only
    want = base.generate(PROMPT, 24)
    assert merged.generate(PROMPT, 24) == want
    assert len(set(want)) > 3   # not a degenerate run


def test_text_engine_matches_the_reference_on_the_base(dirs):
    ours = TextEngine.from_directory(dirs / "base")
    ref = ReferenceEngine(load_checkpoint(dirs / "base"))
    a = ours.prefill(ours.new_state(), PROMPT)
    b = ref.prefill(ref.new_state(), PROMPT)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert ours.generate(PROMPT, 12) == ref.generate(PROMPT, 12)


def test_weights_stay_bf16_and_memory_mapped(dirs):
    w = TextEngine.from_directory(dirs / "merged").weights
    gate = w["model.layers.0.mlp.gate_proj.weight"]
    assert isinstance(gate, Bf16Matrix) and isinstance(gate.bits, np.memmap)
    head = w[LM_HEAD]   # float32 on disk (GPU rows); its text rows are bf16 numbers
    assert isinstance(head, Bf16Matrix) and head.shape[0] == 150
    assert isinstance(w[EMBED], np.memmap) and w[EMBED].dtype == np.float32


def test_a_text_token_id_past_the_text_rows_is_refused(dirs):
    from qgpu.model.engine import TokenError

    merged = TextEngine.from_directory(dirs / "merged")
    with pytest.raises(TokenError, match="outside the vocabulary"):
        merged.generate([150], 1)   # the first GPU token


def test_a_checkpoint_missing_a_layer_tensor_is_refused(dirs, tmp_path):
    import json
    import shutil

    for f in (dirs / "base").iterdir():
        shutil.copy(f, tmp_path / f.name)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    index["weight_map"] = {k: v for k, v in index["weight_map"].items()
                           if "layers.1.mlp.up_proj" not in k}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    # the header still holds the tensor: the reader reads headers, so drop it from the
    # config's view by asking for one more layer
    body = json.loads((tmp_path / "config.json").read_text())
    body["text_config"]["num_hidden_layers"] += 1
    body["text_config"]["layer_types"].append("linear_attention")
    (tmp_path / "config.json").write_text(json.dumps(body))
    with pytest.raises(CheckpointError, match="missing weights model.layers.3"):
        TextEngine.from_directory(tmp_path)


def test_bf16_products_are_the_same_bits_on_any_thread_count(monkeypatch):
    rng = np.random.default_rng(0)
    bits = narrow_exact(widen((rng.standard_normal((300, 2052)).astype(np.float32)
                               .view(np.uint32) >> 16).astype(np.uint16)))
    m = Bf16Matrix(bits)
    x = rng.standard_normal((3, 2052)).astype(np.float32)
    monkeypatch.setenv("QGPU_THREADS", "1")
    one = x @ m.T
    monkeypatch.setenv("QGPU_THREADS", "3")
    three = x @ m.T
    assert one.dtype == np.float32 and one.shape == (3, 300)
    np.testing.assert_array_equal(one, three)
    # several inputs (a prompt: each row widened once) or one at a time: the same bits
    np.testing.assert_array_equal(np.stack([row @ m.T for row in x]), one)
    exact = x.astype(np.float64) @ widen(bits).astype(np.float64).T
    np.testing.assert_allclose(one, exact, rtol=1e-4, atol=1e-3)
    assert load_lib() is not None or one is not None


def test_narrow_exact_refuses_a_value_that_is_not_bf16():
    assert narrow_exact(np.array([1.0, 0.5], np.float32)) is not None
    assert narrow_exact(np.array([1.0, 1.0 + 2 ** -20], np.float32)) is None


def test_the_chats_prompt_path_gives_the_same_ids_on_merged_and_base(dirs):
    from qgpu.chat.text import TextModel

    base = TextModel(TextEngine.from_directory(dirs / "base"), None, 150, max_new_tokens=16)
    merged = TextModel(TextEngine.from_directory(dirs / "merged"), None, 150,
                       max_new_tokens=16)
    want = base.generate_ids(PROMPT)
    assert merged.generate_ids(PROMPT) == want and len(want) == 16
    assert merged.stats["prompt_tokens"] == len(PROMPT) and merged.stats["tokens"] == 16


def test_the_prompt_cache_gives_the_same_ids_and_feeds_only_new_tokens(dirs):
    from qgpu.chat.text import TextModel

    start = 1   # plays <|im_start|>: a state is kept before each "message"
    system = [start, 5, 17, 3, 99, 42, 7, 8, 9]
    first = system + [start, 11, 12, 13]
    fresh = TextModel(TextEngine.from_directory(dirs / "merged"), None, 150,
                      max_new_tokens=8)
    fresh.cache = None   # each prompt read whole
    cached = TextModel(TextEngine.from_directory(dirs / "merged"), None, 150,
                       max_new_tokens=8, message_start=start)
    answer = cached.generate_ids(first)
    assert cached.stats["cached_tokens"] == 0
    again = cached.generate_ids(first)   # a retry: everything but the last token cached
    assert again == answer and cached.stats["cached_tokens"] == len(first) - 1
    # a new turn after the answer: the prompt, the answer and the new message's tokens
    turn = first + answer + [start, 21, 22]
    assert cached.generate_ids(turn) == fresh.generate_ids(turn)
    assert cached.stats["cached_tokens"] == len(first) + len(answer) - 1
    assert fresh.stats["cached_tokens"] == 0
    # another question on the same system prompt: only the tokens after it are fed
    other = system + [start, 31, 32, 33]
    assert cached.generate_ids(other) == fresh.generate_ids(other)
    assert cached.stats["cached_tokens"] == len(system)


def _fixed_order_product(bits: np.ndarray, x: np.ndarray) -> np.ndarray:
    """bf16_matvec.c's summation order in numpy float32: column c into partial c % 32 in
    column order (a multiply, then an add), the 32 partials reduced in its tree."""
    w = widen(bits)
    p = np.zeros((x.shape[0], w.shape[0], 32), np.float32)
    for c in range(w.shape[1]):
        p[:, :, c % 32] = p[:, :, c % 32] + (x[:, None, c] * w[None, :, c])
    q = ((p[..., 0:8] + p[..., 8:16]) + p[..., 16:24]) + p[..., 24:32]
    return ((q[..., 0] + q[..., 4]) + (q[..., 2] + q[..., 6])) + \
        ((q[..., 1] + q[..., 5]) + (q[..., 3] + q[..., 7]))


@pytest.mark.parametrize("rows,cols,tokens", [(9, 70, 1), (9, 70, 3), (4, 64, 2), (3, 31, 1)])
def test_bf16_products_keep_the_fixed_summation_order(rows, cols, tokens, monkeypatch):
    """The four-row AVX-512 blocks, the one-row tail and the widened-row prompt path all
    give the fixed order's bits (so the greedy ids stay the base's)."""
    rng = np.random.default_rng(rows * cols + tokens)
    bits = (rng.standard_normal((rows, cols)).astype(np.float32).view(np.uint32)
            >> 16).astype(np.uint16)
    x = rng.standard_normal((tokens, cols)).astype(np.float32)
    monkeypatch.setenv("QGPU_THREADS", "2")
    got = x @ Bf16Matrix(bits).T
    if load_lib() is None:
        pytest.skip("no C compiler: the numpy fallback sums in its own order")
    np.testing.assert_array_equal(got.view(np.uint32),
                                  _fixed_order_product(bits, x).view(np.uint32))


def test_q8_text_weights_run_close_to_the_bf16_base_but_not_equal(dirs):
    from qgpu.model.q8 import Q8Matrix

    bf16 = TextEngine.from_directory(dirs / "base")
    q8 = TextEngine.from_directory(dirs / "base", "q8")
    gate = q8.weights["model.layers.0.mlp.gate_proj.weight"]
    assert isinstance(gate, Q8Matrix) and gate.nbytes < 0.6 * bf16.weights[
        "model.layers.0.mlp.gate_proj.weight"].nbytes
    a = bf16.prefill(bf16.new_state(), PROMPT)
    b = q8.prefill(q8.new_state(), PROMPT)
    assert not np.array_equal(a, b)   # 8-bit weights: not the base's bits
    scale = np.abs(a).max()
    assert np.abs(a - b).max() < 0.05 * scale   # but close
    ids = q8.generate(PROMPT, 8)
    assert len(ids) == 8 and all(0 <= t < 150 for t in ids)


def test_unknown_text_weights_are_refused(dirs):
    with pytest.raises(CheckpointError, match="text weights 'q4'"):
        TextEngine.from_directory(dirs / "base", "q4")
