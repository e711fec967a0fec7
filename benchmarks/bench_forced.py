"""Speed of the two checks of a launch on the compiled machine (`load_machine()`): greedy
generation (the default run, `--check`) against teacher forcing (`--check --forced`:
`FastEngine.forced_greedy`, known tokens layer by layer in one native call per chunk).

For each one-warp launch of the kernel suite (or --names), both runs feed the same
prompt and then the trace: generation one token at a time (`step_greedy`, each argmax fed
back), forcing the interpreter's trace in chunks of --chunk tokens; both must give the
interpreter's tokens and bit-identical states. Reports trace tokens/s of each (the
prompt's tokens are not counted) and whole-launch wall times through the public engines
("model-check" vs "model-forced", interpreter replay included), with the load average
(the machine is shared). Runs alternate to even out the load.

    python benchmarks/bench_forced.py [--names conv2d_3x3 modpow] [--repeats 2] [--chunk 256]
        [--all] [--no-engines]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgpu import suite  # noqa: E402
from qgpu.interp import run_launch  # noqa: E402
from qgpu.isa import limits  # noqa: E402
from qgpu.protocol import encode_prompt, expected_trace  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def launches(names, every: bool = False):
    for spec in suite.load_suite():
        if names and spec.name not in names:
            continue
        for i, launch in enumerate(spec.launches):
            if every or limits.launch_warps(launch["grid"], launch["block"]) == 1:
                yield spec, i, launch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="*", default=[])
    parser.add_argument("--all", action="store_true",
                        help="every suite launch (multi-warp ones too), not only one-warp ones")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--no-engines", action="store_true",
                        help="skip the whole-launch timings through the public engines")
    args = parser.parse_args(argv)
    machine = load_machine()
    engine = machine.engine
    totals = {"tokens": 0, "generate": 0.0, "forced": 0.0, "check": 0.0, "model-forced": 0.0}
    print(f"{'launch':34s} {'trace':>6s} {'gen tok/s':>10s} {'forced tok/s':>13s} "
          f"{'check s':>8s} {'forced s':>9s}")
    for spec, index, launch in launches(args.names, args.all):
        function = suite.compiled_module(spec.source).get_function(spec.kernel)
        grid, block = launch["grid"], launch["block"]
        program, memory, _layout, _arrays = function.link(
            grid, block, suite.positional_args(spec, launch["args"]))
        want = expected_trace(run_launch(program, grid, block, memory=list(memory)).events)
        prompt = encode_prompt(program, grid, block, memory)
        best = {"generate": np.inf, "forced": np.inf, "check": np.inf, "model-forced": np.inf}
        for _ in range(args.repeats):
            state = engine.new_state()
            engine.consume(state, prompt[:-1])
            t0 = time.perf_counter()
            token, trace = engine.step_greedy(state, prompt[-1]), []
            trace.append(token)
            while len(trace) < len(want):
                token = engine.step_greedy(state, token)
                trace.append(token)
            best["generate"] = min(best["generate"], time.perf_counter() - t0)
            forced_state = engine.new_state()
            engine.consume(forced_state, prompt[:-1])
            feed, got = [prompt[-1]] + want[:-1], []
            t0 = time.perf_counter()
            for a in range(0, len(feed), args.chunk):
                got += engine.forced_greedy(forced_state, feed[a:a + args.chunk])
            best["forced"] = min(best["forced"], time.perf_counter() - t0)
            assert trace == want == got, spec.case_id(index)
            for i in state.recurrent:
                assert np.array_equal(state.recurrent[i], forced_state.recurrent[i])
            if not args.no_engines:
                for name, engine_name in (("check", "model-check"),
                                          ("model-forced", "model-forced")):
                    t0 = time.perf_counter()
                    suite.run_case(spec, launch, engine=engine_name)
                    best[name] = min(best[name], time.perf_counter() - t0)
        n = len(want)
        totals["tokens"] += n
        for key in best:
            totals[key] += best[key] if np.isfinite(best[key]) else 0.0
        print(f"{spec.case_id(index):34s} {n:6d} {n / best['generate']:10.0f} "
              f"{n / best['forced']:13.0f} {best['check']:8.2f} {best['model-forced']:9.2f}",
              flush=True)
    n = totals["tokens"]
    ratio = totals["generate"] / totals["forced"]
    print(f"all: {n} trace tokens; generation {n / totals['generate']:.0f} tokens/s, teacher "
          f"forced {n / totals['forced']:.0f} tokens/s ({ratio:.2f}x); "
          f"whole launches: model-check {totals['check']:.1f} s, model-forced "
          f"{totals['model-forced']:.1f} s; {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
