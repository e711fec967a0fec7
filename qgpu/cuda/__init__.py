"""cuda: the host's NVRTC-and-driver role. clang driver and bundled header, PTX parser,
lowering to machine blocks (register allocation, block packing), and the launch API.

    driver     CUDA -> PTX and AST with clang-19, the shipped headers (include/)
    signature  kernels, C++ names and parameter types from clang's AST
    shape      dim3 launch shapes; threadIdx/blockIdx from the linear ids
    ptx        PTX text -> functions, instructions, operands
    lower      PTX -> IR: control flow, memory spaces, guards  (select: per instruction,
               divide: div/rem loops, wide: 64-bit on register pairs, devcalls: printf
               and assert calls)
    printf     format strings, call sites, the printf buffer read after a launch
    optimize   propagation, coalescing, CFG clean-up      layout  ROM order (reconvergence)
    schedule   stages and machine blocks                 regalloc  15 registers
    spill      values to local memory when 15 do not suffice
    codegen    the pipeline, emission                    link      templates, binding
    api        compile / Module / Kernel (CuPy-like launches)
    launch_args  a launch in words: --kernel, --arg NAME=VALUE

Owns: CUDA C to machine programs, and launching them (ENGINES: the interpreter here; the
runtime registers the model's engines). May import: protocol, interp, isa, errors.
"""

from qgpu.cuda.api import ENGINES, Kernel, LaunchResult, Module, compile
from qgpu.cuda.many import BATCH_ENGINES, launch_many

__all__ = ["BATCH_ENGINES", "ENGINES", "Kernel", "LaunchResult", "Module", "compile",
           "launch_many"]
