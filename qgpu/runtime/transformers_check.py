"""runtime.transformers_check: unmodified transformers runs a launch from the exported
checkpoint of the compiled machine, holding one module's weights in memory at a time.

The dense float32 checkpoint of the machine is ~22 GB (mostly zeros), more than a CI
machine can hold next to other tests, so `from_pretrained` of the whole model is out.
Instead `StreamedModel` builds transformers' own `Qwen3_5ForCausalLM` from the
checkpoint's config.json on the `meta` device (no memory) and runs the model's own,
unmodified `forward` over the whole sequence; forward hooks on the embedding, on each
decoder layer, on the final norm and on the LM head materialise that module's weights
from model.safetensors (safetensors.safe_open, by tensor name, `load_state_dict(...,
strict=True, assign=True)`) just before it runs and put it back on `meta` just after.
The largest modules held are the embedding and the LM head (71,125 x 6,097 float32,
1.6 GiB each, one after the other); a decoder layer is ~0.6 GiB. Only the rotary
embedding (a computed, non-persistent buffer) is built on the CPU, by transformers' own
class. The safetensors file is opened per module: a mapping kept open for the whole pass
counts every page it touched as resident (peak RSS 19.7 GiB instead of 2.9 GiB).

Figures on the dot launch (2 CPUs, 23 GiB): compile from the disk cache ~35 s (peak RSS
3.9 GiB); export 36-52 s (22.07 GiB on disk, phase peak 0.9 GiB); the streamed pass
over 122 tokens 27-100 s (depending on how much of the file the page cache holds; phase
peak 2.9 GiB, the sparse compiled weights included); the reference comparison ~20-45 s.

Teacher forcing: the whole sequence prompt + trace[:-1] goes through the model in one
forward pass (the Gated DeltaNet layers take transformers' chunked path, the last layer
causal full attention); the greedy argmax at the last prompt position and at every
trace position must equal the next token of the interpreter's trace. Because the model
is causal (the logits at position t depend only on tokens 0..t), this is the same as
greedy generation reproducing the trace token by token: by induction, every generated
token equals the trace token that was fed at its position. (Generation itself, one
token per forward pass, would read the 22 GB checkpoint once per token.)

The chunked path is exact here: the machine's signals are values float32 holds exactly
through either order of operations. `check_in_transformers` shows it twice: layer 0,
rebuilt on its own, gives bit-identical outputs on transformers' chunked path (whole sequence) and
its recurrent path (one token at a time through a DynamicCache: the first token takes the
chunked path, as transformers does for a one-token prompt; the rest the recurrent rule),
both equal to the full pass; and every layer's output and the logits are compared with
qgpu's `ReferenceEngine` (recurrent mode). On the dot launch the logits and 28 of 29
layers are bit-equal; layer 12 differs in 320 values of one position, ~9.5e-7 residues
off by one ulp (1.1e-13; the matrix products' summation order, torch vs numpy), which
layer 13 cleans up (REFERENCE_TOLERANCE).

After the pass, transformers' `DynamicCache` holds every linear-attention layer's
recurrent state [batch, heads, dk, dv]; the memory table's rows are read from it with
`qgpu.circuit.machine.memory.read_memory` (the layout qgpu's own state uses).
"""

from __future__ import annotations

import json
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from qgpu.cuda import compile as compile_cuda
from qgpu.model.checkpoint import WEIGHTS_FILE
from qgpu.suite import DEMO_KERNEL, kernel_source

# Largest difference allowed between a layer's output in transformers and in qgpu's
# ReferenceEngine: the machine's signals are exact in both, but a few sub-1e-6 residues
# (raw reads the next layers clean up) may differ in their last bit with the order of a
# matrix product's sums (torch vs numpy BLAS): 1.1e-13 seen on the dot launch.
REFERENCE_TOLERANCE = 1e-9


def peak_rss_bytes() -> int:
    """This process's peak resident set size (ru_maxrss, kilobytes on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class StreamedModel:
    """transformers' Qwen3_5ForCausalLM on `meta`, its modules' weights read from the
    checkpoint one module at a time while the model's own forward runs."""

    def __init__(self, directory: str | Path):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        self.directory = Path(directory)
        self.config = AutoConfig.from_pretrained(self.directory)
        with torch.device("meta"):
            self.model = AutoModelForCausalLM.from_config(self.config,
                                                          dtype=torch.float32).eval()
        inner = self.model.model
        # the rotary embedding's inv_freq is computed, not stored: build it for real
        inner.rotary_emb = type(inner.rotary_emb)(config=self.model.config)
        self._path = str(self.directory / WEIGHTS_FILE)
        self.loaded_bytes = 0          # the largest module materialised, in bytes
        self.modules_loaded = 0
        self._hooks = []
        parts = [("model.embed_tokens.", inner.embed_tokens), ("model.norm.", inner.norm),
                 ("lm_head.", self.model.lm_head)]
        parts += [(f"model.layers.{i}.", layer) for i, layer in enumerate(inner.layers)]
        for prefix, module in parts:
            self._hooks.append(module.register_forward_pre_hook(self._loader(prefix)))
            self._hooks.append(module.register_forward_hook(self._release))

    def _loader(self, prefix: str):
        from safetensors import safe_open

        def load(module, args):
            names = list(module.state_dict())
            # opened per module: the file's mapping (whose touched pages count as resident)
            # is closed again once the module's tensors are copied out
            with safe_open(self._path, framework="pt") as f:
                tensors = {n: f.get_tensor(prefix + n) for n in names}
            module.load_state_dict(tensors, strict=True, assign=True)
            self.loaded_bytes = max(self.loaded_bytes,
                                    sum(t.numel() * t.element_size() for t in tensors.values()))
            self.modules_loaded += 1
        return load

    @staticmethod
    def _release(module, args, output):
        module.to("meta")

    def forward(self, tokens: list[int], observe_layers=()):
        """One forward pass of transformers' model over `tokens` (batch 1) with a fresh
        DynamicCache: (logits [T, vocab], cache, {layer: (its input, its output)})."""
        import torch
        from transformers import DynamicCache

        seen: dict[int, tuple] = {}
        hooks = []
        for i in observe_layers:
            def keep(module, args, output, i=i):
                out = output[0] if isinstance(output, tuple) else output
                seen[i] = (args[0].clone(), out.clone())
            hooks.append(self.model.model.layers[i].register_forward_hook(keep))
        try:
            with torch.no_grad():
                cache = DynamicCache(config=self.model.config)
                out = self.model(torch.tensor([tokens]), cache=cache, use_cache=True)
        finally:
            for h in hooks:
                h.remove()
        return out.logits[0], cache, seen

    def layer_paths(self, i: int, hidden):
        """Linear-attention decoder layer i of transformers, materialised on its own, over
        `hidden` [1, T, H]: (output of the chunked path over the whole sequence, output
        of the recurrent path fed one token at a time through a DynamicCache)."""
        import torch
        from transformers import DynamicCache

        layer = self.model.model.layers[i]
        with torch.device("meta"):
            layer = type(layer)(self.model.config, i)
        self._loader(f"model.layers.{i}.")(layer, ())
        with torch.no_grad():
            chunked = layer(hidden, position_embeddings=None,
                            cache=DynamicCache(config=self.model.config))
            cache = DynamicCache(config=self.model.config)
            steps = [layer(hidden[:, t:t + 1], position_embeddings=None, cache=cache)
                     for t in range(hidden.shape[1])]
        layer.to("meta")
        return chunked, torch.cat(steps, dim=1)


def recurrent_states(cache, layers) -> dict[int, np.ndarray]:
    """Linear-attention layers' recurrent states from transformers' cache, [Hv, dk, dv]."""
    return {i: cache.layers[i].recurrent_states[0][0].numpy() for i in layers}


def reference_layer_outputs(weights, tokens: list[int], n_layers: int,
                            mode: str = "recurrent") -> tuple[dict, np.ndarray | None]:
    """qgpu's ReferenceEngine over `tokens`: ({layer: output} for layers 0..n_layers-1,
    the logits if n_layers is every layer, else None: the pass stops after layer
    n_layers-1, so only those layers are densified, one tensor at a time)."""
    from qgpu.model.reference import ReferenceEngine

    outputs: dict[int, np.ndarray] = {}
    last = weights.config.num_hidden_layers

    class Stop(Exception):
        pass

    final: dict[str, np.ndarray] = {}

    def observe(layer, site, value):
        if site == "residual_in" and layer > 0:
            outputs[layer - 1] = np.array(value)
            if layer >= n_layers:
                raise Stop
        if layer == last - 1:
            final[site] = np.array(value)

    engine = ReferenceEngine(weights, observer=observe, dense_cache_bytes=0)
    try:
        logits = engine.prefill(engine.new_state(), tokens, mode=mode)
    except Stop:
        return outputs, None
    # the last layer's output, summed in the engine's order: (h + mixer) + mlp
    outputs[last - 1] = (final["residual_in"] + final["mixer_out"]) + final["mlp_out"]
    return outputs, logits


class PeakRss:
    """Peak resident memory of a phase: Linux resets the peak (VmHWM) when 5 is written
    to /proc/self/clear_refs; elsewhere the process's peak so far is reported. `growth`:
    the peak minus the resident memory when the phase began (what the phase itself
    needs, whatever else the process already holds, e.g. other tests' machines)."""

    def __enter__(self):
        self.start = _status_bytes("VmRSS:")
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        return self

    @property
    def growth(self) -> int:
        return max(0, self.bytes - self.start)

    def __exit__(self, *exc):
        self.bytes = peak_rss_bytes()
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.bytes = int(line.split()[1]) * 1024
        except OSError:
            pass
        return False


def _status_bytes(key: str) -> int:
    """A /proc/self/status memory line in bytes (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class LaunchCheck:
    prompt: list[int]
    trace: list[int]
    predicted: list[int] = field(default_factory=list)  # argmax, last prompt + trace positions
    memory: list[int] | None = None    # global memory read from transformers' cache
    want_memory: list[int] = field(default_factory=list)  # the interpreter's final memory
    layers_diff: dict = field(default_factory=dict)  # layer -> max |transformers - reference|
    logits_equal: bool | None = None   # transformers' logits bit-equal to the reference's
    paths_equal: bool | None = None    # layer 0: chunked == recurrent == the full pass
    seconds: dict = field(default_factory=dict)
    peak_rss: dict = field(default_factory=dict)  # phase -> bytes
    rss_growth: dict = field(default_factory=dict)  # phase -> peak minus RSS at its start
    largest_module_bytes: int = 0
    checkpoint_bytes: int = 0

    @property
    def ok(self) -> bool:
        return (self.predicted == self.trace and self.memory == self.want_memory
                and all(d <= REFERENCE_TOLERANCE for d in self.layers_diff.values())
                and self.logits_equal is not False
                and self.paths_equal is not False)

    def figures(self) -> dict:
        return {"ok": self.ok, "trace_tokens": len(self.trace),
                "prompt_tokens": len(self.prompt), "trace_equal": self.predicted == self.trace,
                "memory_equal": self.memory == self.want_memory,
                "layers_compared": len(self.layers_diff),
                "layers_not_bit_equal": {i: d for i, d in self.layers_diff.items() if d},
                "logits_equal": self.logits_equal, "paths_equal": self.paths_equal,
                "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
                "peak_rss_gib": {k: round(v / 2**30, 2) for k, v in self.peak_rss.items()},
                "rss_growth_gib": {k: round(v / 2**30, 2) for k, v in self.rss_growth.items()},
                "largest_module_gib": round(self.largest_module_bytes / 2**30, 2),
                "checkpoint_gib": round(self.checkpoint_bytes / 2**30, 2)}


def dot_launch():
    """The dot-product launch of benchmarks/bench_machine.py: (program, grid, block,
    memory, prompt tokens, interpreter trace, interpreter final memory)."""
    from qgpu.interp import run_launch
    from qgpu.isa import limits
    from qgpu.protocol import encode_prompt, expected_trace

    source = kernel_source(DEMO_KERNEL)
    kernel = compile_cuda(source, filename=f"{DEMO_KERNEL}.cu").get_function("dot")
    a, b = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32)
    program, memory, _, _ = kernel.link(1, 3, (a, b, np.zeros(1, np.int32), 3))
    prompt = [int(x) for x in encode_prompt(program, 1, 3, memory)]
    result = run_launch(program, 1, 3, memory=memory, sizes=limits.MODEL_MEMORY)
    return program, 1, 3, memory, prompt, expected_trace(result.events), list(result.memory)


def check_in_transformers(compiled, directory: str | Path, prompt: list[int],
                          trace: list[int], want_memory: list[int], *, export: bool = True,
                          reference_layers: int | None = None,
                          paths: bool = True) -> LaunchCheck:
    """Export `compiled` (unless export=False: the checkpoint is there), run transformers
    streamed over prompt + trace[:-1] and compare (see the module's docstring); the
    first `reference_layers` layers (default all, then the logits too) against qgpu's
    ReferenceEngine, and with `paths` layer 0's chunked and recurrent paths."""
    import torch

    from qgpu.circuit.machine.memory import read_memory
    from qgpu.model.checkpoint import save_checkpoint

    directory = Path(directory)
    check = LaunchCheck(prompt, trace, want_memory=want_memory)
    if export:
        t = time.perf_counter()
        with PeakRss() as peak:
            save_checkpoint(compiled.weights, directory)
        check.seconds["export"] = time.perf_counter() - t
        check.peak_rss["export"], check.rss_growth["export"] = peak.bytes, peak.growth
    check.checkpoint_bytes = sum(f.stat().st_size for f in directory.iterdir())
    n_ref = compiled.weights.config.num_hidden_layers if reference_layers is None \
        else reference_layers
    tokens = prompt + trace[:-1]

    t = time.perf_counter()
    with PeakRss() as peak:
        streamed = StreamedModel(directory)
        logits, cache, seen = streamed.forward(tokens, observe_layers=range(max(n_ref, 1)))
        check.predicted = logits[len(prompt) - 1:].argmax(-1).tolist()
        linear = [i for i, kind in enumerate(streamed.config.layer_types)
                  if kind == "linear_attention"]
        state = SimpleNamespace(recurrent=recurrent_states(cache, linear))
        check.memory = read_memory(compiled, state)
    check.seconds["transformers"] = time.perf_counter() - t
    check.peak_rss["transformers"], check.rss_growth["transformers"] = peak.bytes, peak.growth
    check.largest_module_bytes = streamed.loaded_bytes

    if paths:
        t = time.perf_counter()
        layer_in, layer_out = seen[0]
        chunked, recurrent = streamed.layer_paths(0, layer_in)
        check.paths_equal = bool(torch.equal(chunked, layer_out)
                                 and torch.equal(recurrent, layer_out))
        check.seconds["paths"] = time.perf_counter() - t
    if n_ref:
        t = time.perf_counter()
        with PeakRss() as peak:
            ref, ref_logits = reference_layer_outputs(compiled.weights, tokens, n_ref)
        for i in range(n_ref):
            check.layers_diff[i] = float(np.abs(seen[i][1][0].numpy() - ref[i]).max())
        if ref_logits is not None:
            check.logits_equal = bool(np.array_equal(logits.numpy(), ref_logits))
        check.seconds["reference"] = time.perf_counter() - t
        check.peak_rss["reference"], check.rss_growth["reference"] = peak.bytes, peak.growth
    return check


def main() -> int:
    """python -m qgpu.runtime.transformers_check DIR: export the dot machine to DIR and
    check the dot launch in transformers; prints the figures as JSON."""
    import sys

    from qgpu.circuit.machine.build import compile_machine
    from qgpu.circuit.machine.spec import MachineSpec
    from qgpu.circuit.schedule import LayerShape

    program, _, _, _, prompt, trace, final = dot_launch()
    t = time.perf_counter()
    with PeakRss() as peak:
        compiled = compile_machine(LayerShape.qwen35_2b(),
                                   MachineSpec.for_programs([program]))
    compile_s = time.perf_counter() - t
    export = not (Path(sys.argv[1]) / WEIGHTS_FILE).is_file()
    check = check_in_transformers(compiled, sys.argv[1], prompt, trace, final, export=export,
                         reference_layers=int(sys.argv[2]) if len(sys.argv) > 2 else None)
    figures = check.figures()
    figures["seconds"]["compile"] = round(compile_s, 1)
    figures["peak_rss_gib"]["compile"] = round(peak.bytes / 2**30, 2)
    print(json.dumps(figures, indent=1))
    return 0 if check.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
