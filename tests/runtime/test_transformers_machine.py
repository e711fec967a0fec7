"""The dot-product launch in unmodified transformers from the exported checkpoint of the
machine (only the dot kernel's operations compiled in: 29 layers, hidden 6097), streamed
one module at a time (qgpu.runtime.transformers_check): the dense float32 checkpoint is
~22 GiB on disk, more than the CI machine's memory."""

import shutil

import pytest

from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.model.checkpoint import WEIGHTS_FILE
from qgpu.runtime.transformers_check import (
    REFERENCE_TOLERANCE,
    PeakRss,
    check_in_transformers,
    dot_launch,
)
from tests.memory import release_memory

GIB = 2**30


@pytest.mark.slow
def test_dot_launch_in_transformers_streamed(tmp_path):
    """Greedy argmax at the last prompt position and every trace position equals the
    interpreter's trace (teacher forcing, which is greedy generation of the trace: the
    model is causal); global memory read from transformers' recurrent state equals the
    interpreter's (out = 32); every layer's output matches qgpu's ReferenceEngine (the
    logits bit for bit); layer 0's chunked and recurrent paths give the same bits; peak
    memory stays far below the checkpoint's size."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    release_memory(keep_default_machine=False)   # this test needs ~5 GiB of its own
    program, _, _, _, prompt, trace, final = dot_launch()
    assert final[:7] == [1, 2, 3, 4, 5, 6, 32]     # a, b, out = 1*4 + 2*5 + 3*6
    with PeakRss() as compile_peak:
        compiled = compile_machine(LayerShape.qwen35_2b(), MachineSpec.for_programs([program]))
    free = shutil.disk_usage(tmp_path).free
    assert free > 23 * GIB, (f"the checkpoint needs ~22.1 GiB on disk, {free / GIB:.1f} GiB "
                             f"free under {tmp_path}")
    try:
        check = check_in_transformers(compiled, tmp_path, prompt, trace, final)
    finally:   # pytest keeps the last runs' tmp_path: do not leave 22 GiB behind
        (tmp_path / WEIGHTS_FILE).unlink(missing_ok=True)
    figures = check.figures()
    figures["peak_rss_gib"]["compile"] = round(compile_peak.bytes / GIB, 2)
    print(figures)
    assert check.predicted == trace
    assert check.memory == final
    assert len(check.layers_diff) == compiled.plan.n_layers
    assert max(check.layers_diff.values()) <= REFERENCE_TOLERANCE
    assert check.logits_equal and check.paths_equal
    assert check.largest_module_bytes < 2 * GIB          # the LM head, 1.6 GiB
    assert check.rss_growth["transformers"] < 8 * GIB  # the process may hold other machines
    assert check.rss_growth["export"] < 8 * GIB
    assert check.ok
