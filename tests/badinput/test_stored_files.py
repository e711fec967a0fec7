"""Issue 29, caches that cannot lie: stored engine plans (model.plan_file) and compile
cache entries (circuit.cache) carry a checksum checked on load. 1,000 random corruptions
of each (bit flips, byte runs, zeroed or cut ranges, appended bytes) are refused with an
error naming the file (a plan) or named, deleted and compiled again (a cache entry),
never read into an engine; then the real thing gives the right result. Writers use a
temporary name and rename; killed writers' leftovers are cleaned; the cache folder is
checked before a compile."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from qgpu.circuit import cache as disk
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import adder_machine
from qgpu.files import (
    StoredFileError,
    atomic_write,
    clean_leftovers,
    folder_problem,
    tmp_name,
)
from qgpu.model import fast_native
from qgpu.model.fast import FastEngine
from qgpu.model.plan_file import load_plan, save_plan
from tests.model.hf_util import random_weights, tiny_config
from tests.model.test_fast import sparsify

N_CORRUPTIONS = 1000


def corrupt(data: bytes, rng: np.random.Generator) -> bytes:
    """One random damage of the kinds a disk, a killed writer or a hand can do."""
    b = bytearray(data)
    kind = rng.integers(6)
    if kind == 0:  # one bit
        i = int(rng.integers(len(b)))
        b[i] ^= 1 << int(rng.integers(8))
    elif kind == 1:  # a few random bytes anywhere
        for i in rng.integers(0, len(b), int(rng.integers(2, 40))).tolist():
            b[i] = int(rng.integers(256))
    elif kind == 2:  # a zeroed range (a quarter at most)
        a, n = int(rng.integers(len(b))), int(rng.integers(1, len(b) // 4))
        b[a:a + n] = bytes(len(b[a:a + n]))
    elif kind == 3:  # cut short
        del b[int(rng.integers(len(b))):]
    elif kind == 4:  # bytes appended
        b += rng.bytes(int(rng.integers(1, 64)))
    else:  # a block moved over another (a misdirected write)
        a, c, n = (int(x) for x in rng.integers(0, len(b) - 64, 3))
        n = min(n, 4096, len(b) - max(a, c))
        b[c:c + n] = data[a:a + n]
    return bytes(b)


@pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")
def test_1000_corrupted_plans_are_refused_by_name(tmp_path):
    config = tiny_config(layer_types=["linear_attention"] * 3)
    engine = FastEngine(sparsify(random_weights(config, seed=41), 0.3, seed=42))
    path = save_plan(tmp_path / "p.qplan", engine.plan.fields, {"k": 1})
    good = path.read_bytes()
    tokens = np.random.default_rng(43).integers(0, config.vocab_size, 20)
    want = engine.generate(tokens.tolist(), 8)
    rng = np.random.default_rng(44)
    refused = 0
    start = time.perf_counter()
    for _ in range(N_CORRUPTIONS):
        bad = corrupt(good, rng)
        path.write_bytes(bad)
        try:
            fields, meta = load_plan(path)
        except StoredFileError as err:
            assert str(path) in str(err) and len(str(err).splitlines()) == 1
            refused += 1
            continue
        assert bad == good  # only an unchanged file loads (a move over itself)
    assert refused >= N_CORRUPTIONS - 20
    assert time.perf_counter() - start < 60
    path.write_bytes(good)  # the rebuilt plan runs as the engine does
    fields, _ = load_plan(path)
    assert FastEngine.from_plan(config, fields).generate(tokens.tolist(), 8) == want


def test_1000_corrupted_cache_entries_are_named_deleted_and_rebuilt(tmp_path, capsys):
    demo = adder_machine()
    first = compile_circuit(demo.circuit, LayerShape.small(), cache=tmp_path)
    path = tmp_path / f"{first.key}.npz"
    good = path.read_bytes()
    rng = np.random.default_rng(45)
    rebuilt = 0
    capsys.readouterr()
    for _ in range(N_CORRUPTIONS):
        bad = corrupt(good, rng)
        path.write_bytes(bad)
        hit = disk.load(first.key, tmp_path)
        err = capsys.readouterr().err
        if hit is None:
            assert err.count("\n") == 1 and str(path) in err and "deleted" in err, err
            assert not path.exists()
            rebuilt += 1
        else:
            assert bad == good and not err
    assert rebuilt >= N_CORRUPTIONS - 20
    path.write_bytes(corrupt(good, np.random.default_rng(46)))
    again = compile_circuit(adder_machine().circuit, LayerShape.small(), cache=tmp_path)
    assert not again.from_cache and "compiling again" in capsys.readouterr().err
    assert path.read_bytes() == good or disk.entry_problem(path) is None
    for name, tensor in first.weights.tensors.items():
        np.testing.assert_array_equal(again.weights[name], tensor)
    third = compile_circuit(adder_machine().circuit, LayerShape.small(), cache=tmp_path)
    assert third.from_cache


def test_an_interrupted_writer_leaves_no_output(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(KeyboardInterrupt), atomic_write(target) as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    assert not list(tmp_path.iterdir())
    with atomic_write(target) as tmp:
        tmp.write_bytes(b"whole")
    assert target.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [target]


def test_killed_writers_leftovers_are_cleaned(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    left = tmp_path / f".qgpu-tmp-{dead}-0123abcd-abc.npz"
    left.write_bytes(b"x" * 100)
    mine = tmp_name(tmp_path / "abc.npz")
    mine.write_bytes(b"y")
    assert clean_leftovers(tmp_path) == [left]
    assert not left.exists() and mine.exists()


def test_cache_folder_checked_before_compiling(tmp_path, capsys):
    a_file = tmp_path / "f"
    a_file.write_text("")
    assert "is a file" in folder_problem(a_file)
    assert "needed" in folder_problem(tmp_path, 1 << 60)
    compiled = compile_circuit(adder_machine().circuit, LayerShape.small(), cache=a_file)
    err = capsys.readouterr().err
    assert "cache folder cannot be used" in err and "is a file" in err
    assert compiled.weights is not None and a_file.read_text() == ""


DEMO = "__global__ void k(int *out, int x) { out[threadIdx.x] = x * 3 + threadIdx.x; }\n"


@pytest.mark.slow
@pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")
def test_the_real_machines_corrupted_plan_is_rebuilt_by_name(tmp_path):
    """The default machine's stored plan with a flipped bit (it segfaulted, ran forever or
    wrote a million tokens): `qgpu run` names it, deletes it, builds the machine again
    from the compile cache and prints the right result; the next run maps the new plan."""
    import shutil

    from qgpu.runtime import compiled as rc

    cache = tmp_path / "cache"
    cache.mkdir()
    for entry in disk.cache_dir().glob("*.npz"):  # the compile cache, so no full compile
        shutil.copy(entry, cache)
    source = tmp_path / "k.cu"
    source.write_text(DEMO)
    argv = [sys.executable, "-m", "qgpu.cli", "run", str(source), "--grid", "1", "--block",
            "4", "--arg", "out=zeros:4", "--arg", "x=5"]
    env = {**os.environ, "QGPU_CACHE_DIR": str(cache), "QGPU_PROGRESS": "0"}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    plan = rc.plan_path(rc.LayerShape.qwen35_2b(), rc.DEFAULT_SPEC).name
    path = cache / plan
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 8
    path.write_bytes(data)
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert f"{path}: checksum mismatch" in second.stderr and "deleted" in second.stderr
    assert "[15, 16, 17, 18]" in second.stdout
    third = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert third.returncode == 0 and "checksum" not in third.stderr
    assert "[15, 16, 17, 18]" in third.stdout
