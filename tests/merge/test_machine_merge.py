"""The machine circuit merged (in memory) into random bases at its layer shape: launches
inside the merged model are token-exact against the interpreter on the fast engine, their
results (read from the merged model's state through qgpu_merge.json's location) equal the
interpreter's memory; text keeps the base's next-token distribution. Programs and kernels
the machine does not run yet (spec.check_launch) are skipped, so new operations are
picked up as they land."""

import numpy as np
import pytest

import qgpu
from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.circuit.schedule import LayerShape
from qgpu.errors import LaunchError, QgpuError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.merge.circuits import check_machine_shape
from qgpu.merge.layout import MergeError
from qgpu.merge.size import MACHINE_HIDDEN, MACHINE_LAYERS, machine_size
from qgpu.model.fast import FastEngine
from qgpu.protocol import expected_trace
from qgpu.runtime.checkpoint import OffsetEngine, machine_from_weights, standalone_info
from qgpu.runtime.generate import generate_launch
from tests.runtime.programs import MEMORY_PROGRAMS, PROGRAMS

from .helpers import text_kl
from .machine_helpers import MACHINE_BASES, machine_base, machine_part, merged_machine

# merged machines hold a few GiB each: one xdist worker takes every test that builds them
pytestmark = pytest.mark.xdist_group("merged_machine")

KERNELS = {  # CUDA kernels: (source, block, args); skipped while the machine lacks an op
    "seven_plus": ("__global__ void k(int *out) { if (threadIdx.x == 0) out[0] = 7 + out[1]; }",
                   4, {"out": [0, 35]}),
    "first_lane_sub": ("__global__ void k(int *out, int x) { if (threadIdx.x == 0) "
                       "out[0] = x - out[2]; }", 3, {"out": [1, 2, 3], "x": 10}),
    "vector_add": ("__global__ void k(int *a, int *b, int *c) { int i = threadIdx.x; "
                   "c[i] = a[i] + b[i]; }", 4, {"a": [1, 2, 3, 4], "b": [10, 20, 30, -4],
                                                "c": [0, 0, 0, 0]}),
}
SPEC = MachineSpec(slots=1)


def _skip_unless_supported(program, block):
    try:
        check_launch(SPEC, program, 1, block)
    except QgpuError as exc:
        pytest.skip(f"not in the machine yet: {exc}")


@pytest.mark.slow
@pytest.mark.parametrize("program", ["straight", "divergent", "memory", "same_word"])
@pytest.mark.parametrize("base_name", sorted(MACHINE_BASES))  # nearest: varies slowest
def test_program_in_the_merged_model_is_token_exact(base_name, program):
    source = {**PROGRAMS, **MEMORY_PROGRAMS}[program]
    prog = assemble(source)
    _skip_unless_supported(prog, 4)
    machine, lay = merged_machine(base_name)
    memory = [(7 * a + 3) * (-1) ** a & 0xFFFFFFFF for a in range(20)]
    res = run_launch(prog, 1, 4, memory=memory)
    want = expected_trace(res.events)
    run = generate_launch(machine, prog, 1, 4, memory, max_tokens=len(want) + 8)
    assert run.trace == want
    assert run.memory == res.memory
    assert machine.gpu_token_offset == lay.gpu_token_offset == 160


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_supported_program_in_one_merged_model(program):
    prog = assemble(PROGRAMS[program])
    _skip_unless_supported(prog, 3)
    machine, _ = merged_machine("m64_tied_linear")
    want = expected_trace(run_launch(prog, 1, 3).events)
    assert generate_launch(machine, prog, 1, 3, max_tokens=len(want) + 8).trace == want


@pytest.mark.slow
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_cuda_kernel_on_the_merged_model_with_check(kernel):
    from qgpu.runtime.checkpoint import engine_name

    source, block, args = KERNELS[kernel]
    fn = qgpu.compile(source, engine="interp").get_function("k")
    machine, _ = merged_machine("m96_untied_full")
    values = {k: np.array(v, np.int32) if isinstance(v, list) else v for k, v in args.items()}
    want = {k: np.array(v, np.int32) if isinstance(v, list) else v for k, v in args.items()}
    ref = fn(1, block, want, engine="interp")
    _skip_unless_supported(ref.program, block)
    got = fn(1, block, values, engine=engine_name(machine, check=True))  # token by token
    assert got.trace == ref.trace
    for k, v in want.items():
        if isinstance(v, np.ndarray):
            assert values[k].tolist() == v.tolist()
    if kernel == "seven_plus":
        assert values["out"].tolist() == [42, 35]


@pytest.mark.slow
@pytest.mark.parametrize("base_name", sorted(MACHINE_BASES))
def test_text_distribution_is_the_bases(base_name):
    machine, lay = merged_machine(base_name)
    base = machine_base(base_name, seed=3)
    text = np.random.default_rng(2).integers(0, base.config.vocab_size, 40).tolist()
    original = FastEngine(base)
    want = original.prefill(original.new_state(), text)
    merged = machine.inner
    got = merged.prefill(merged.new_state(), text)
    kl = text_kl(want, got)
    print(f"{base_name}: text KL mean {kl.mean():.2e} max {kl.max():.2e}")
    assert kl.max() < 1e-9
    assert got[:, lay.gpu_token_offset:].max() < -1e12  # GPU tokens: probability 0


@pytest.mark.slow
def test_standalone_machine_weights_run_the_same_launch():
    """The machine alone (what `qgpu export-machine` writes) through the same loader."""
    part = machine_part()
    info = standalone_info(part.weights.config, part.info)
    machine = machine_from_weights(part.weights, info)
    prog = assemble(MEMORY_PROGRAMS["memory"])
    memory = list(range(30))
    res = run_launch(prog, 1, 4, memory=memory)
    run = generate_launch(machine, prog, 1, 4, memory)
    assert run.trace == expected_trace(res.events)
    assert run.memory == res.memory
    assert not machine.merged


def test_head_dims_below_the_memory_table_are_refused():
    with pytest.raises(MergeError, match=r"key and value head dims >= 128.*"
                                         r"linear_key_head_dim 64, linear_value_head_dim 32"):
        check_machine_shape(LayerShape(16, 16, 64, 32, 6144, 4, 8, 2, 256))
    check_machine_shape(LayerShape.qwen35_2b())


def test_offset_engine_refuses_a_text_token_at_a_gpu_position():
    class Engine:
        def new_state(self):
            return None

        def step_greedy(self, state, token):
            self.fed = token
            return 5  # a text token

    inner = Engine()
    engine = OffsetEngine(inner, 100, 50)
    with pytest.raises(LaunchError, match="token id 5 at a GPU position"):
        engine.step_greedy(None, 7)
    assert inner.fed == 107


def test_machine_size_report_of_a_2b_merge():
    """merge.size's prediction counted independently: transformers' own Qwen3.5 text
    model, built on the meta device from each config the report holds (the base, the
    circuit alone, the merge), has exactly the parameters the report counts; the merged
    vocabulary is the base's padded one, the protocol's GPU tokens and the pad."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import AutoConfig, AutoModelForCausalLM

    from qgpu.protocol import VOCAB_SIZE

    report = machine_size()
    for config, counted in ((report.base, report.base_parameters),
                            (report.layout.circuit, report.circuit_parameters),
                            (report.merged, report.merged_parameters)):
        hf = config.to_hf_dict()
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
                hf.pop("model_type"), **hf))
        assert sum(p.numel() for p in model.parameters()) == counted, config
    assert report.merged.vocab_size == 248_320 + VOCAB_SIZE + 1
    assert report.merged.num_hidden_layers == MACHINE_LAYERS + 24
    assert report.layout.circuit_hidden == MACHINE_HIDDEN < report.merged.hidden_size
    # the base layers are stored bf16 (norms float32): at least 2 bytes a parameter
    assert report.disk_bytes["base"] >= 2 * (report.base_parameters
                                             - 248_320 * report.base.hidden_size)
    print(report.markdown())


def test_the_merged_machine_group_reaches_xdist(request):
    """./dev test runs with --dist loadgroup so that this module's tests share one worker
    (memory); pytest 9.2 made xdist 3.8 drop the group silently (pyproject pins pytest)."""
    # in an xdist worker, "dist" reads "no"; the worker's own flag says loadgroup
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run with --dist loadgroup")
    assert request.node.nodeid.endswith("@merged_machine"), request.node.nodeid
