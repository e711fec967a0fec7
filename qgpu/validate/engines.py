"""validate.engines: the kernel suite's launches on a merged (or exported) checkpoint's
machine in third-party engines on an NVIDIA GPU, compared with the interpreter (issue 18,
points 2 and 3). Prepared here without a GPU; run it where one is:

    pip install -e '.[hf]'                       # transformers (torch with CUDA)
    python -m qgpu.validate.engines --engine transformers-cuda --model DIR \\
        [--max-launches N] [--out report.json]
    pip install vllm                              # its own torch; float32 requested
    python -m qgpu.validate.engines --engine vllm --model DIR [--concurrency 64]

- transformers-cuda: `AutoModelForCausalLM.from_pretrained(DIR, dtype=float32)` on
  cuda. Every launch is checked by teacher forcing (prompt + the interpreter's trace in
  one forward pass; the argmax at every position must be the next trace token: the
  transformers chunked path), then generated greedily (`generate`, do_sample=False: the
  recurrent path), token by token equal to the interpreter's trace; the memory is read
  from the cache's recurrent state (the memory table, qgpu_merge.json), as qgpu's
  engines read it. tokens/s: generated trace tokens over generation wall time.
- vllm: `vllm serve DIR --dtype float32` is started (or --url an existing server), each
  launch sent to /v1/completions as token ids (temperature 0, max_tokens = trace + 8,
  stop at HALT), `--concurrency` requests in flight; vLLM's state is not reachable from
  a client, so the final memory is replayed from the launch's memory records (the
  trace's ADDR/value pairs over the initial memory). Throughput: trace tokens of all
  launches over the wall time with that many in flight.
The report (JSON, and one line per engine on stdout) names engine, version, device,
launches, exact or not and the first mismatch (`runtime.check.check_trace`'s message).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qgpu.errors import CheckMismatch, QgpuError
from qgpu.protocol import Launch, decode_trace, encode_prompt, expected_trace, tok

HALT = tok("HALT")


def suite_launches(max_launches: int | None = None):
    """(case id, program, grid, block, memory) of the suite's launches the model machine
    runs (its sizes: suite.model_sized), shortest first."""
    from qgpu.interp import run_launch
    from qgpu.isa import limits
    from qgpu.suite import compiled_module, load_suite, model_sized, positional_args

    cases = []
    for spec in load_suite():
        fn = compiled_module(spec.source).get_function(spec.kernel)
        for i, launch in enumerate(spec.launches):
            if not model_sized(spec, launch):
                continue
            program, memory, _, _ = fn.link(launch["grid"], launch["block"],
                                            positional_args(spec, launch["args"]))
            res = run_launch(program, grid=launch["grid"], block=launch["block"],
                             memory=list(memory) or None, sizes=limits.MODEL_MEMORY)
            cases.append((len(expected_trace(res.events)), spec.case_id(i), program,
                          launch["grid"], launch["block"], list(memory)))
    cases.sort(key=lambda c: c[0])
    return [c[1:] for c in cases[:max_launches]]


def memory_from_records(program, grid, block, memory, trace) -> list[int]:
    """Global memory after the launch from its trace's memory records alone (flat
    addresses: the global words first, shared memory after them)."""
    from qgpu.isa.limits import MODEL_GLOBAL_WORDS as GLOBAL_WORDS

    out = list(memory)
    for rec in decode_trace(Launch(program, grid, block, list(memory)), trace):
        for addr, value in rec.mem_writes:
            if addr < GLOBAL_WORDS:
                out += [0] * max(0, addr + 1 - len(out))
                out[addr] = value
    return out


def compare(case, program, grid, block, memory, trace, got_memory) -> dict:
    from qgpu.runtime.check import check_trace

    prompt = encode_prompt(program, grid, block, memory)
    row = {"case": case, "tokens": len(trace), "exact": True, "mismatch": None}
    try:
        check_trace(program, grid, block, memory, prompt, trace, got_memory)
    except CheckMismatch as exc:
        row.update(exact=False, mismatch=str(exc))
    return row


# -- transformers on CUDA --------------------------------------------------------------
def run_transformers(model_dir: Path, launches, device: str) -> dict:
    import numpy as np
    import torch
    import transformers

    from qgpu.circuit.machine.memory import decode_memory_rows
    from qgpu.interp import run_launch
    from qgpu.isa import limits
    from qgpu.runtime.checkpoint import read_info
    from qgpu.runtime.transformers_engine import check_greedy, greedy_config, load_model

    info = read_info(model_dir)
    off, where = info["gpu_token_offset"], info["circuit_info"]["memory"]
    # plain greedy whatever the checkpoint's generation_config.json says
    model = load_model(model_dir, device)
    rows, gen_tokens, gen_seconds = [], 0, 0.0
    for case, program, grid, block, memory in launches:
        prompt = encode_prompt(program, grid, block, memory)
        res = run_launch(program, grid=grid, block=block, memory=memory or None,
                         sizes=limits.MODEL_MEMORY)
        want = expected_trace(res.events)
        ids = torch.tensor([[off + t for t in prompt + want[:-1]]], device=device)
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1:]
        forced = [int(t) - off for t in logits.argmax(-1).tolist()]
        first = next((i for i, (a, b) in enumerate(zip(forced, want, strict=True))
                      if a != b), None)
        ids = torch.tensor([[off + t for t in prompt]], device=device)
        config = greedy_config(off + HALT, len(want) + 8)
        check_greedy(model, config, ids)
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids),
                                 generation_config=config)
        torch.cuda.synchronize() if device.startswith("cuda") else None
        seconds = time.perf_counter() - start
        trace = [int(t) - off for t in out.sequences[0, len(prompt):].tolist()]
        # the cache keeps {state index: [batch, heads, dk, dv]} per linear-attention layer
        state = out.past_key_values.layers[where["layer"]].recurrent_states[0][0]
        table = state[where["head"], :where["rows"], :where["columns"]].float().cpu().numpy()
        got = decode_memory_rows(np.asarray(table))
        row = compare(case, program, grid, block, memory, trace, got)
        row["forced_first_mismatch"] = first
        row["exact"] = row["exact"] and first is None
        row["seconds"] = round(seconds, 3)
        rows.append(row)
        gen_tokens += len(trace)
        gen_seconds += seconds
        print(f"{case}: {'exact' if row['exact'] else 'MISMATCH'} ({len(trace)} tokens, "
              f"{len(trace) / seconds:.1f} tokens/s)", flush=True)
    return {"engine": "transformers", "version": transformers.__version__,
            "torch": torch.__version__, "device": torch.cuda.get_device_name(0)
            if device.startswith("cuda") else device, "dtype": "float32",
            "tokens_per_second": round(gen_tokens / gen_seconds, 2) if gen_seconds else None,
            "rows": rows}


# -- vLLM ------------------------------------------------------------------------------
def start_vllm(model_dir: Path, port: int, max_len: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
           str(model_dir), "--dtype", "float32", "--port", str(port),
           "--max-model-len", str(max_len), "--skip-tokenizer-init"]
    proc = subprocess.Popen(cmd)
    import urllib.request

    for _ in range(900):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                raise QgpuError(f"vllm exited with {proc.returncode}") from None
            time.sleep(2)
    proc.terminate()
    raise QgpuError("vllm did not come up in 30 minutes")


def _complete(url: str, model: str, prompt: list[int], max_tokens: int, stop: int) -> list[int]:
    import urllib.request

    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stop_token_ids": [stop], "include_stop_str_in_output": True,
            "skip_special_tokens": False, "return_token_ids": True}
    req = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        choice = json.loads(r.read())["choices"][0]
    ids = choice.get("token_ids")
    if ids is None:
        raise QgpuError("the server returned no token_ids (vLLM >= 0.10.2 needed)")
    return list(ids) + ([stop] if choice.get("finish_reason") == "stop"
                        and (not ids or ids[-1] != stop) else [])


def run_vllm(model_dir: Path, launches, concurrency: int, url: str | None) -> dict:
    import urllib.request

    from qgpu.interp import run_launch
    from qgpu.isa import limits
    from qgpu.runtime.checkpoint import read_info

    info = read_info(model_dir)
    off = info["gpu_token_offset"]
    work = []
    for case, program, grid, block, memory in launches:
        prompt = encode_prompt(program, grid, block, memory)
        want = expected_trace(run_launch(program, grid=grid, block=block,
                                         memory=memory or None,
                                         sizes=limits.MODEL_MEMORY).events)
        work.append((case, program, grid, block, memory, prompt, want))
    max_len = max(len(p) + len(w) for *_, p, w in work) + 16
    proc = None if url else start_vllm(model_dir, 8000, max_len)
    url = url or "http://127.0.0.1:8000"
    try:
        models = json.loads(urllib.request.urlopen(f"{url}/v1/models").read())
        name = models["data"][0]["id"]

        def one(item):
            case, program, grid, block, memory, prompt, want = item
            ids = _complete(url, name, [off + t for t in prompt], len(want) + 8, off + HALT)
            return item, [t - off for t in ids]

        start = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(one, work))
        seconds = time.perf_counter() - start
    finally:
        if proc is not None:
            proc.terminate()
    rows, total = [], 0
    for (case, program, grid, block, memory, _prompt, _want), trace in results:
        try:
            got = memory_from_records(program, grid, block, memory, trace)
        except QgpuError:
            got = None   # the trace does not decode: check_trace names the first difference
        rows.append(compare(case, program, grid, block, memory, trace, got))
        total += len(trace)
    import vllm

    return {"engine": "vllm", "version": vllm.__version__, "dtype": "float32",
            "concurrency": concurrency, "seconds": round(seconds, 2),
            "tokens_per_second": round(total / seconds, 2), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m qgpu.validate.engines",
                                description=__doc__.splitlines()[0])
    p.add_argument("--engine", required=True, choices=("transformers-cuda", "vllm"))
    p.add_argument("--model", required=True, type=Path, help="merged or exported checkpoint")
    p.add_argument("--max-launches", type=int, help="the N shortest suite launches")
    p.add_argument("--device", default="cuda")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--url", help="an already running vLLM server")
    p.add_argument("--out", type=Path, help="write the report as JSON")
    args = p.parse_args(argv)
    launches = suite_launches(args.max_launches)
    if args.engine == "transformers-cuda":
        report = run_transformers(args.model, launches, args.device)
    else:
        report = run_vllm(args.model, launches, args.concurrency, args.url)
    rows = report["rows"]
    exact = sum(r["exact"] for r in rows)
    first = next((r for r in rows if not r["exact"]), None)
    report["summary"] = {"launches": len(rows), "exact": exact,
                         "first_mismatch": first and {"case": first["case"],
                                                      "mismatch": first["mismatch"]}}
    print(f"{report['engine']} {report['version']}: {exact}/{len(rows)} launches exact, "
          f"{report['tokens_per_second']} tokens/s")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0 if exact == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
