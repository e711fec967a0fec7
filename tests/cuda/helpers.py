"""Shared helpers of the front-end tests: compile and launch small kernels."""

import numpy as np

import qgpu
from qgpu.cuda import codegen, ptx
from qgpu.interp import run_launch
from qgpu.isa import limits


def launch(src: str, name: str, grid: int, block: int, *args):
    """Compile src, launch kernel `name`; returns (result, kernel). Arrays are updated."""
    kernel = qgpu.compile(src, engine="interp").get_function(name)
    return kernel(grid, block, list(args)), kernel


def i32(values) -> np.ndarray:
    return np.array([limits.s32(int(v)) for v in values], dtype=np.int32)


def u32(values) -> np.ndarray:
    return np.array([limits.u32(int(v)) for v in values], dtype=np.uint32)


PTX_HEADER = ".version 7.0\n.target sm_75\n.address_size 32\n"


def run_ptx(body: str, params: int = 1, grid: int = 1, block: int = 4, memory=None,
            values=None):
    """Lower a hand-written PTX entry `k` (u32 params k_param_0..) and run it; the first
    parameter is an output array at word 0. Returns the final global memory."""
    decl = ",\n".join(f"  .param .u32 k_param_{i}" for i in range(params))
    text = f"{PTX_HEADER}.visible .entry k(\n{decl}\n)\n{{\n{body}\n}}\n"
    template = codegen.compile_kernel(ptx.parse(text), "k", "k")
    vals = {"ntid": block, "nctaid": grid, **{f"param:{i}": 0 for i in range(params)},
            **template.scratch_symbols(block, template.shared_bytes)}
    vals.update(values or {})
    program = template.bind(vals)
    mem = memory if memory is not None else [0] * limits.MODEL_GLOBAL_WORDS
    return run_launch(program, grid=grid, block=block, memory=mem).memory
