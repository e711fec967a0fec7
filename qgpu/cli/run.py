"""qgpu run: compile a CUDA file and launch one kernel.

    qgpu run FILE.cu --grid X[,Y[,Z]] --block X[,Y[,Z]] [--kernel NAME] [-I DIR]
             [--engine model|interp|llama.cpp|transformers] [--check] [--forced]
             [--model DIR] [--device cpu|cuda|mps] [--json] --arg NAME=VALUE ...

The launch runs on the compiled model by default (its engine plan is memory-mapped from
the plan store: runtime.compiled); --engine interp runs the reference interpreter.
--check (with the model) generates the trace on the model, then replays the launch
on the interpreter and compares token by token (and the final memory). --forced checks by
teacher forcing instead (implies --engine model --check): the prompt and the
interpreter's trace go through the model in one pass, and the model's greedy token at
every position must be the trace's next token (equivalent to generation writing the
trace; faster, since the fast engine runs known tokens layer by layer); the memory is
read from the model's state after the pass (runtime.check.forced_launch).

--model FILE.gguf (`qgpu export-gguf`) runs it on llama.cpp through llama-cpp-python
(--engine llama.cpp; runtime.llama_cpp), --check and --forced as above.

--model DIR runs the launch on a checkpoint's machine (a merged checkpoint from `qgpu merge`
or one from `qgpu export-machine`; implies --engine model): GPU tokens offset into its
vocabulary, results read from its recurrent state (qgpu.runtime.checkpoint).
--engine transformers --model DIR [--device D]: transformers' own from_pretrained and
greedy generate() write the launch, results read from its cache
(qgpu.runtime.transformers_engine); --check compares with the interpreter.

`qgpu run FILE.cu --list` lists the file's kernels (C++ names, parameters, file:line) and
whether each runs or why not. --kernel takes a C++ name (k, ns::k, reduce<int>, k(int *)).

NAME is a parameter's name in the kernel's source; every parameter needs one --arg. A
pointer parameter takes comma-separated values of its element type (the array's initial
contents) or zeros:N, with an optional type prefix (u8:1,2,3); an integer parameter takes
one integer (cuda.launch_args reads them). Several launches in one command: give an
--arg several times (`--arg n=4 --arg n=8 --arg n=16`: three launches); an --arg given
once applies to every launch, and every repeated one must be given as many times. They
run as one list (on the model: runtime.generate_many), each
reported in turn (with --json, one object per line, "launch": its number); the exit
status is 1 when any failed. --json
prints one JSON object: {"kernel", "engine", "args": {NAME: final contents (pointer
parameters)}, "tokens"} and "printf" (the device's printf output) when it printed.
--printf-words N sizes the device printf buffer (cuda.printf).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from qgpu.cli.html import (
    MAX_SOURCE_BYTES,
    add_html_argument,
    check_html,
    launch,
    page_error,
)
from qgpu.cuda import compile as compile_cuda
from qgpu.cuda.launch_args import parse_arg_sets, pick_kernel, set_symbols
from qgpu.cuda.shape import parse_dims
from qgpu.errors import QgpuError
from qgpu.files import json_dumps, read_bytes_limited
from qgpu.isa import limits


class RunError(QgpuError):
    """A bad command line for `qgpu run` (reported as one line)."""


def add_arguments(p) -> None:
    p.add_argument("file", metavar="FILE.cu", help="CUDA source file")
    p.add_argument("--grid", help="CTAs in the launch: gridDim, x[,y[,z]] (e.g. 4 or 2,2)")
    p.add_argument("--block", help="threads per CTA: blockDim, x[,y[,z]] (e.g. 8 or 4,2)")
    p.add_argument("--kernel", help="the __global__ function when the file has several: its "
                                    "C++ name (k, ns::k, reduce<int>, or k(int *) for an "
                                    "overload)")
    p.add_argument("--shared-bytes", type=int, default=0, metavar="N",
                   help="bytes of dynamic shared memory (extern __shared__ arrays), as the "
                        "third <<<...>>> argument")
    p.add_argument("--printf-words", type=int, metavar="N",
                   help="words of global memory for the device printf/assert buffer (a "
                        "counter word, then the records; default: all words the arrays "
                        "leave free)")
    p.add_argument("--symbol", action="append", default=[], metavar="NAME=VALUES",
                   help="fill a __constant__/__device__ array before the launch (as "
                        "cudaMemcpyToSymbol): NAME=1,2,3")
    p.add_argument("--list", action="store_true",
                   help="list the file's kernels, their parameters, and whether each can run")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                   help="a folder searched for #include files (besides the source's own)")
    p.add_argument("--engine", choices=("model", "interp", "llama.cpp", "transformers"),
                   default="model",
                   help="run on the compiled model (default), the reference interpreter, "
                        "llama.cpp (with --model FILE.gguf from qgpu export-gguf) or, with "
                        "--model DIR, transformers' own generate()")
    p.add_argument("--device", choices=("cpu", "cuda", "mps"),
                   help="torch device of --engine transformers (default cpu)")
    p.add_argument("--check", action="store_true",
                   help="replay the launch on the interpreter and compare token by token")
    p.add_argument("--forced", action="store_true",
                   help="check by teacher forcing: the interpreter's trace through the model "
                        "in one pass, every greedy token compared (implies --engine model "
                        "--check)")
    p.add_argument("--model", metavar="DIR",
                   help="run on this merged or exported machine checkpoint (--engine model)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--budget", type=int, metavar="N",
                   help="end the launch with an error after N executed blocks (default: "
                        f"{limits.DEFAULT_BLOCK_BUDGET} or {limits.BUDGET_PER_WARP} per warp "
                        "on the interpreter, "
                        "runtime.generate.DEFAULT_MODEL_BUDGET on the model)")
    add_html_argument(p)
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a kernel argument: NAME=1,2,3 or NAME=zeros:N for pointers (the "
                        "element type's values; a prefix u8: i16: u32: f32: ... names "
                        "another), NAME=INT for integers; an --arg given k times makes k "
                        "launches, run as one list (one given once applies to all)")


def _values(a: np.ndarray) -> list:
    return [float(x) if a.dtype.kind == "f" else int(x) for x in a.reshape(-1)]


def _dims(text, what: str):
    if text is None:
        raise RunError(f"--{what} is required (e.g. --{what} 4 or --{what} 2,2)")
    return parse_dims(str(text), what)


def listing(module) -> str:
    """`qgpu run FILE --list`: every kernel with its parameters, and why one cannot run."""
    lines = []
    for sig in module.signatures:
        try:
            words = module.get_function(sig.overload).template.stats.get("local_words")
            state = "runs" if not words else (f"runs on the interpreter only ({words} words "
                                              f"of local memory: register spills)")
        except QgpuError as exc:
            state = f"cannot run: {exc}"
        lines.append(f"{sig}  [{sig.where}]\n  {state}")
    return "\n".join(lines) or f"{module.filename}: no __global__ functions"


def run(args) -> dict:
    forced = getattr(args, "forced", False)
    if args.check and args.engine == "interp" and not getattr(args, "model", None) \
            and not forced:
        raise RunError("--check compares the model's tokens with the interpreter's, so it "
                       "needs --engine model (or --model DIR); on the interpreter there is "
                       "nothing to compare with")
    transformers = getattr(args, "engine", None) == "transformers"
    if transformers and not getattr(args, "model", None):
        raise RunError("--engine transformers needs --model DIR (a merged or exported "
                       "machine checkpoint)")
    if transformers and forced:
        raise RunError("--forced checks on qgpu's engine; with --engine transformers use "
                       "--check (generate(), then the interpreter's replay)")
    if getattr(args, "device", None) and not transformers:
        raise RunError("--device applies to --engine transformers")
    gguf = str(getattr(args, "model", None) or "").endswith(".gguf")
    if args.engine == "llama.cpp" and not gguf:
        raise RunError("--engine llama.cpp needs --model FILE.gguf (qgpu export-gguf)")
    if gguf and transformers:
        raise RunError("--engine transformers needs a checkpoint directory, not a GGUF file")
    if gguf:
        args.engine = "llama.cpp"
    elif (getattr(args, "model", None) or forced) and not transformers:
        args.engine = "model"
    args.check = args.check or forced
    engine = "model-forced" if forced else \
        "model-check" if args.engine != "interp" and args.check else args.engine
    path = Path(args.file)
    check_html(getattr(args, "html", None), args.file, getattr(args, "model", None))
    try:
        source = read_bytes_limited(path, MAX_SOURCE_BYTES, "CUDA source")   # as clang reads
    except OSError as exc:
        raise RunError(f"cannot read {args.file}: {exc.strerror}") from None
    module = compile_cuda(source, filename=args.file,
                          include_dirs=tuple(getattr(args, "include", []) or ()))
    if getattr(args, "list", False):
        return {"listing": listing(module)}
    grid, block = _dims(args.grid, "grid"), _dims(args.block, "block")
    kernel = pick_kernel(module, args.kernel)
    sets = parse_arg_sets(kernel, args.arg)
    if len(sets) > 1 and getattr(args, "html", None):
        raise RunError("--html draws one launch; several --arg values make several "
                       "launches: give each --arg once")
    values = sets[0]
    set_symbols(module, getattr(args, "symbol", []) or [])
    if args.engine != "interp":
        # imported here, not at module level: the engines cost every `qgpu` command ~0.4 s
        import qgpu.runtime  # noqa: F401 - registers the model's engines
    if transformers:
        from qgpu.runtime.transformers_engine import TransformersMachine
        from qgpu.runtime.transformers_engine import engine_name as transformers_engine

        machine = TransformersMachine(args.model, args.device)  # held: weakly registered
        engine = transformers_engine(machine, check=args.check)
    elif gguf:
        from qgpu.runtime.checkpoint import engine_name
        from qgpu.runtime.llama_cpp import load_gguf_machine

        machine = load_gguf_machine(args.model)   # held: the registry refers weakly
        engine = engine_name(machine, check=args.check, forced=forced)
    elif getattr(args, "model", None):
        from qgpu.runtime.checkpoint import engine_name, load_machine_checkpoint

        # a chat's /run passes its loaded machine (cli.chat_run); held: weakly registered
        machine = getattr(args, "machine", None) or load_machine_checkpoint(args.model)
        engine = engine_name(machine, check=args.check, forced=forced)
    budget = getattr(args, "budget", None)
    if budget is not None and budget < 1:
        raise RunError(f"--budget {budget}: give at least 1 block")
    if len(sets) > 1:  # launched as one list (on the model: runtime.generate_many)
        befores = [_before(v) for v in sets]
        results = kernel.launch_many(grid, block, sets, engine=engine, budget=budget,
                                     shared_mem=getattr(args, "shared_bytes", 0),
                                     printf_words=getattr(args, "printf_words", None),
                                     errors="return")
        return {"launches": [_outcome(kernel, args.engine, grid, block, before, v, res)
                             for before, v, res in zip(befores, sets, results, strict=True)]}
    before = _before(values)
    try:
        result = launch(kernel, grid, block, values, engine, getattr(args, "html", None),
                        budget, getattr(args, "shared_bytes", 0),
                        getattr(args, "printf_words", None))
    except QgpuError as err:   # a failed assert, a full printf buffer: what was printed first
        if getattr(err, "printed", "") and not args.json:
            sys.stdout.write(err.printed)
            sys.stdout.flush()
        raise
    return _outcome(kernel, args.engine, grid, block, before, values, result)


def _before(values: dict) -> dict:
    return {n: _values(v) if isinstance(v, np.ndarray) else v for n, v in values.items()}


def _outcome(kernel, engine: str, grid, block, before: dict, values: dict, result) -> dict:
    """What `report` and --json show of one launch (result: its LaunchResult, or the
    error of a launch that failed among several)."""
    out = {"kernel": kernel.name, "engine": engine, "grid": _shown(grid),
           "block": _shown(block), "before": before,
           "scalars": {p.name: values[p.name] for p in kernel.params if not p.pointer},
           "stats": kernel.template.stats, "signature": str(kernel.signature)}
    if isinstance(result, QgpuError):
        return {**out, "error": f"{type(result).__name__}: {result}",
                "printed": getattr(result, "printed", "") or "", "page_error": None}
    return {**out, "args": {p.name: _values(values[p.name]) for p in kernel.params
                            if p.pointer},
            "tokens": result.tokens, "blocks_executed": result.blocks_executed,
            "seconds": result.seconds, "page_error": page_error(result),
            "printed": result.printed, "result": result}


def report(r: dict) -> str:
    st = r["stats"]
    lines = [f"{r['signature']}  grid {r['grid']} x block {r['block']}  engine {r['engine']}"]
    width = max([len(n) for n in list(r["args"]) + list(r["scalars"])] + [1])
    for n, v in r["scalars"].items():
        lines.append(f"  {n:<{width}} = {v}")
    for n, after in r["args"].items():
        lines.append(f"  {n:<{width}}   before {r['before'][n]}")
        lines.append(f"  {'':<{width}}   after  {after}")
    tokens = "unknown" if r["tokens"] is None else str(r["tokens"])
    lines.append(f"tokens {tokens}, {r['blocks_executed']} blocks executed, "
                 f"{r['seconds'] * 1000:.1f} ms")
    lines.append(f"program: {st['blocks']} blocks, {st['instructions']} instructions, "
                 f"{st['pressure']} registers at peak"
                 + (f", {st['local_words']} words of local memory (register spills)"
                    if st.get("local_words") else ""))
    return "\n".join(lines)


def _shown(d: tuple) -> int | str:
    """A dimension as the report shows it: 4, or 2,2 for a 2-D one."""
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return d[0] if len(d) == 1 else ",".join(map(str, d))


def main(args) -> int:
    r = run(args)      # errors: qgpu.cli prints them as one line
    if "listing" in r:
        print(r["listing"])
        return 0
    if "launches" in r:
        return _many(args, r["launches"])
    if args.json:
        out = {"kernel": r["kernel"], "engine": r["engine"], "args": r["args"],
               "tokens": r["tokens"]}
        if r["printed"]:
            out["printf"] = r["printed"]
        print(json_dumps(out))
    else:
        sys.stdout.write(r["printed"])     # the device's printf output, as a GPU prints it
        print(report(r))
    if r["page_error"] is not None:  # the results are out: now the page's error
        raise r["page_error"]
    return 0


def _many(args, launches: list[dict]) -> int:
    """Several launches: each one's report (or its error) in turn, or with --json one
    JSON object per line; exit status 1 when any failed."""
    failed = 0
    for i, r in enumerate(launches, 1):
        failed += "error" in r
        if args.json:
            out = {"launch": i, "kernel": r["kernel"], "engine": r["engine"]}
            out.update({"error": r["error"]} if "error" in r else
                       {"args": r["args"], "tokens": r["tokens"]})
            if r["printed"]:
                out["printf"] = r["printed"]
            print(json_dumps(out))
            continue
        print(f"launch {i} of {len(launches)}")
        sys.stdout.write(r["printed"])
        print(f"  error: {r['error']}" if "error" in r else report(r))
    return 1 if failed else 0
