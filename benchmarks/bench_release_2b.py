"""Qwen3.5-2B with the GPU inside, measured at full size (issue 25): each step runs in a
child process, its wall time and peak RSS taken from the child's own rusage (os.wait4).

1. the release-shaped base (tests/release_base.py, size "2b": transformers' layout, bf16
   shards, Qwen3's tokenizer when ./dev fetched it): wall, peak RSS, bytes;
2. `qgpu merge` (the machine; it stores the launch plan): wall, peak RSS, bytes;
3. `qgpu run kernels/dot.cu --model MERGED --check` (qgpu's engine): wall, peak RSS, 32;
4. `qgpu chat --model MERGED`: one text line, then `/run` of the dot kernel: time to first
   token and tokens/s (printed by the chat), wall, peak RSS;
5. `--engine transformers`: skipped with the reason when the machine lacks the memory
   (the merged model in float32, merge.size's prediction);
6. with --gguf, `qgpu export-gguf` + llama.cpp (when llama_cpp imports): file size, a launch, text
   tokens/s, and llama.cpp on the base alone in f16 for comparison.

    .venv/bin/python benchmarks/bench_release_2b.py --work /work/big/bench [--keep]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
DOT = ["kernels/dot.cu", "--grid", "1", "--block", "4", "--arg", "a=1,2,3", "--arg",
       "b=4,5,6", "--arg", "out=0", "--arg", "n=3"]
LINE = "Hello, who are you?"
GIB = 2 ** 30


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def measured(cmd: list[str], stdin: str | None = None) -> dict:
    """child() with the peak RSS of exactly this child (os.wait4 on its pid)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    with open(os.devnull) as null:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, text=True,
                                stdin=subprocess.PIPE if stdin is not None else null,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    result = {"wall": time.perf_counter() - start, "rss_gib": usage.ru_maxrss * 1024 / GIB,
              "out": out, "err": err, "rc": proc.returncode, "load": load()}
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return result


def size_gib(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / GIB
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / GIB


def mem_available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024 / GIB
    return 0.0


def row(step: str, r: dict, extra: str = "") -> None:
    print(f"| {step} | {r['wall']:.1f} s | {r['rss_gib']:.2f} GiB | {extra} | {r['load']} |",
          flush=True)


def llama_text(model: Path, tokens: int = 16) -> dict:
    """llama.cpp greedy text on a GGUF in a child: load s, tokens/s."""
    script = f"""
import time, json
from llama_cpp import Llama
t = time.perf_counter()
threads = len(__import__('os').sched_getaffinity(0))
llm = Llama(model_path={str(model)!r}, n_ctx=512, n_threads=threads, verbose=False)
loaded = time.perf_counter() - t
ids = llm.tokenize({LINE!r}.encode(), add_bos=False)
t = time.perf_counter(); llm.eval(ids); first = time.perf_counter() - t
out = []
t = time.perf_counter()
for _ in range({tokens}):
    tok = int(llm.scores[llm.n_tokens - 1].argmax())  # greedy
    out.append(tok); llm.eval([tok])
rate = {tokens} / (time.perf_counter() - t)
print(json.dumps({{"load_s": loaded, "prompt_s": first, "tokens_per_s": rate}}))
"""
    r = measured([PY, "-c", script])
    r.update(json.loads(r["out"].strip().splitlines()[-1]))
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/work/big/bench", help="a folder with ~40 GiB free")
    parser.add_argument("--keep", action="store_true", help="keep what it wrote")
    parser.add_argument("--gguf", action="store_true",
                        help="also export-gguf + llama.cpp (float32 GGUFs: the merged one is "
                        "~2x the checkpoint, more than a 24 GiB machine holds)")
    args = parser.parse_args()
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    base, merged = work / "base", work / "merged"
    qgpu = [PY, "-m", "qgpu.cli"]
    print(f"# bench_release_2b: {os.cpu_count()} CPUs, {load()}")
    print("| step | wall | peak RSS | figures | load |\n|---|---|---|---|---|")

    r = measured([PY, "-m", "tests.release_base", str(base), "--size", "2b"])
    tokenizer = (base / "tokenizer.json").is_file()
    row("make the release-shaped 2B base", r, f"{size_gib(base):.2f} GiB on disk, tokenizer "
        f"{'Qwen3' if tokenizer else 'absent'}")

    r = measured(qgpu + ["merge", "--base", str(base), "--out", str(merged), "--quiet"])
    info = json.loads((merged / "qgpu_merge.json").read_text())
    row("qgpu merge (+ launch plan)", r, f"{size_gib(merged):.2f} GiB on disk, hidden "
        f"{info['hidden']}, {info['circuit_layers']} + {info['base_layers']} layers")

    r = measured(qgpu + ["run", *DOT, "--model", str(merged), "--check", "--json"])
    result = json.loads(r["out"])["args"]["out"]
    row("qgpu run dot.cu --model MERGED --check", r, f"out {result}")

    if tokenizer:
        r = measured(qgpu + ["chat", "--model", str(merged), "--max-new-tokens", "24"],
                     f"{LINE}\n/run {' '.join(DOT)}\n/quit\n")
        stats = re.search(r"\[(\d+) tokens; first after ([\d.]+) s \((\d+) prompt tokens\)"
                          r"(?:, then ([\d.]+) tokens/s)?\]", r["err"])
        launch = "out: [0] -> [32]" in r["out"]
        row("qgpu chat --model MERGED (text line, /run)", r,
            f"{stats.group(1)} tokens, first after {stats.group(2)} s ({stats.group(3)} "
            f"prompt tokens), then {stats.group(4)} tokens/s; /run 32: {launch}"
            if stats else f"no stats: {r['err'][-300:]}")
    else:
        print("| qgpu chat | skipped: no Qwen3 tokenizer (./dev fetches it) | | | |")

    need = size_gib(merged) * 2 + 1   # transformers widens bf16 tensors to float32
    if mem_available_gib() < need:
        print(f"| --engine transformers | skipped: {mem_available_gib():.1f} GiB available,"
              f" the merged model needs ~{need:.0f} GiB resident in float32 | | | |")
    else:
        r = measured(qgpu + ["run", *DOT, "--model", str(merged), "--engine", "transformers",
                             "--json"])
        row("qgpu run --engine transformers", r, f"out {json.loads(r['out'])['args']['out']}")

    if not args.gguf or importlib.util.find_spec("llama_cpp") is None:
        print("| llama.cpp | skipped: export-gguf writes float32 only (the merged GGUF is ~2x "
              "the checkpoint; no f16 base for the comparison); --gguf runs it | | | |")
    else:
        gguf = work / "merged.gguf"
        r = measured(qgpu + ["export-gguf", "--model", str(merged), "--out", str(gguf),
                             "--quiet"])
        row("qgpu export-gguf MERGED", r, f"{size_gib(gguf):.2f} GiB")
        r = measured(qgpu + ["run", *DOT, "--model", str(gguf), "--json"])
        row("qgpu run dot.cu --model MERGED.gguf (llama.cpp)", r,
            f"out {json.loads(r['out'])['args']['out']}")
        r = llama_text(gguf)
        row("llama.cpp text on MERGED.gguf", r, f"load {r['load_s']:.1f} s, "
            f"{r['tokens_per_s']:.2f} tokens/s")
        gguf.unlink()
        base_gguf = work / "base-f16.gguf"
        r = measured(qgpu + ["export-gguf", "--model", str(base), "--out", str(base_gguf),
                             "--quiet"])
        row("qgpu export-gguf BASE", r, f"{size_gib(base_gguf):.2f} GiB")
        r = llama_text(base_gguf)
        row("llama.cpp text on the base alone", r, f"load {r['load_s']:.1f} s, "
            f"{r['tokens_per_s']:.2f} tokens/s")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
