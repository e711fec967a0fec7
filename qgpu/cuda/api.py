"""cuda.api: the launch API, modelled on CuPy's RawModule / RawKernel.

    mod = qgpu.compile(src)                 # clang -> PTX, kernels' signatures
    k = mod.get_function("vadd")            # lowered once to a program template
    res = k(grid, block, (a, b, c, n))      # numpy int32/uint32 arrays and Python ints

Arrays are placed one after another in the machine's global memory (word aligned, each
distinct array once, so aliases stay aliases), the template is linked with the launch's
values, the program runs on the chosen engine, and the final memory is copied back into
the caller's arrays, as CuPy's device arrays would hold it. ENGINES maps an engine name to
a runner: the interpreter here; qgpu.runtime registers the model's engines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from qgpu.cuda import ptx
from qgpu.cuda.codegen import compile_kernel
from qgpu.cuda.driver import compile_to_ptx, include_folders
from qgpu.cuda.guard import check_untouched
from qgpu.cuda.launch_args import check_value
from qgpu.cuda.link import KernelTemplate
from qgpu.cuda.many import launch_many
from qgpu.cuda.printf import Buffer, device_fault, finish_buffer, printf_reserve
from qgpu.cuda.shape import Shape, launch_shape
from qgpu.cuda.signature import (
    KernelSignature,
    find_kernel,
    parse_kernels,
    ptx_entry,
    variable_elements,
)
from qgpu.cuda.symbols import from_words, symbol_data, to_words, words_of
from qgpu.errors import CompileError, LaunchError, ProgramError
from qgpu.interp import Machine
from qgpu.isa import Program, limits
from qgpu.isa.faults import Fault
from qgpu.isa.ops import FLOAT_OPS
from qgpu.isa.program import Allocation, local_refusal, local_words
from qgpu.protocol import expected_trace

# the numpy dtypes a pointer parameter takes, by its element's width: either signedness
# (an int* may receive uint32 data, as a cast on a GPU would)
_WIDTH_DTYPES = {1: ("int8", "uint8", "bool"), 2: ("int16", "uint16"), 4: ("int32", "uint32"),
                 8: ("int64", "uint64")}


@dataclass
class EngineRun:
    """What an engine returns: final global memory, block events, the trace tokens; a
    model engine may add each written token's logit margin and the interpreter's trace
    it was checked against; a batch engine (cuda.many) each launch's own seconds."""
    memory: list[int]
    events: list
    trace: list[int]
    margins: list[float] | None = None
    expected: list[int] | None = None
    seconds: float | None = None


class _MemoryFull(LaunchError):
    """The link's error when the data does not fit the memory it is linked into (the
    model's: then the ISA's is tried)."""


def _run_interp(program: Program, grid: int, block: int, memory: list[int],
                budget: int | None) -> EngineRun:
    machine = Machine(program, grid, block, memory,
                      limits.default_budget(grid, block) if budget is None else budget,
                      program.memory_sizes)
    try:
        res = machine.run()
    except Fault as fault:
        fault.memory = list(machine.memory)   # what was printed before it (cuda.printf)
        raise
    traced = program.memory_sizes in (None, limits.MODEL_MEMORY) and \
        limits.fits_model(grid, block) and len(program.blocks) <= limits.MODEL_ROM_BLOCKS
    # a launch past the model machine's sizes has no trace in protocol v5's tokens
    return EngineRun(list(res.memory), list(res.events),
                     expected_trace(res.events) if traced else None)


# name -> runner(program, grid, block, memory, budget) -> EngineRun. The front end knows
# only the interpreter; the runtime registers the model's engines ("model", "model-check",
# "model-forced", and one per loaded checkpoint) when it is imported. budget: the most
# blocks the launch may execute, None for the engine's default (the interpreter's
# DEFAULT_BLOCK_BUDGET; the model's runtime.generate.DEFAULT_MODEL_BUDGET, ~25 s).
ENGINES: dict[str, Callable[..., EngineRun]] = {"interp": _run_interp}


@dataclass
class LaunchResult:
    kernel: str
    engine: str
    grid: int
    block: int
    program: Program
    memory: list[int]            # final global memory (words)
    events: list
    trace: list[int] | None      # the trace tokens the model writes (None: a launch
    #                              past the model machine's sizes, which it cannot write)
    seconds: float
    layout: dict[str, tuple[int, int]]   # parameter name -> (first word, words)
    initial: list[int] = field(default_factory=list)   # global memory before the launch
    signed: dict[str, bool] = field(default_factory=dict)   # pointer parameter -> int32?
    scalars: dict[str, int] = field(default_factory=dict)   # integer parameter -> value
    sources: dict | None = None    # {"source", "filename", "ptx", "origins"} (qgpu.view)
    margins: list[float] | None = None   # top-1 minus top-2 logit per written token
    expected: list[int] | None = None    # the interpreter's trace (model runs, --check)
    printed: str = ""              # device printf output (cuda.printf), as a GPU prints it

    @property
    def tokens(self) -> int | None:
        return None if self.trace is None else len(self.trace)

    @property
    def blocks_executed(self) -> int:
        return len(self.events)

    def html(self) -> str:
        """The launch as one self-contained HTML page (qgpu.view)."""
        from qgpu.view import render_html, result_data
        if self.trace is None:
            raise LaunchError(f"{self.kernel}: the viewer shows launches the model machine "
                              f"runs (its pages are built from the trace tokens); this one "
                              f"(grid {self.grid} x block {self.block}) is past its sizes")
        return render_html(result_data(self))

    def _repr_html_(self) -> str:   # notebooks show the launch viewer
        from qgpu.view import iframe
        return iframe(self.html())


@dataclass
class Prepared:
    """A launch checked and linked, ready for its engine (Kernel.prepare)."""
    kernel: Kernel
    shape: Shape
    grid: int
    block: int
    args: tuple | dict
    engine: str
    runner: Callable[..., EngineRun]
    budget: int | None
    program: Program
    memory: list[int]
    initial: list[int]
    layout: dict
    arrays: list
    buffer: Buffer | None


def _launch_args(args):
    """The launch's arguments as given (a dict by name, or a tuple): anything else, a
    generator included (read once, it would be empty when the results are copied back),
    is a LaunchError before the launch runs."""
    if isinstance(args, dict):
        return args
    if isinstance(args, tuple | list):
        return tuple(args)
    raise LaunchError(f"args must be a tuple, a list or a dict by parameter name, not "
                      f"{type(args).__name__}")


def _budget(budget):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
        raise LaunchError(f"budget {budget!r}: give a number of blocks, at least 1")
    return int(budget)


def scalar_values(params, args) -> dict:
    """The scalar arguments as the results show them: a float parameter's value as a
    float (inf and nan included), an integer's as an int."""
    return {p.name: float(np.float32(a)) if p.dtype == "float32" else int(a)
            for p, a in zip(params, args_list(params, args), strict=True) if not p.pointer}


def args_list(params, args) -> list:
    """Launch arguments in parameter order (a dict by name, or a sequence)."""
    if isinstance(args, dict):
        return [args.get(p.name) for p in params]
    return list(args)


class Kernel:
    """A __global__ function of a Module; call it to launch."""

    def __init__(self, signature: KernelSignature, template: KernelTemplate,
                 engine: str = "interp", shaped: Callable | None = None):
        self.signature = signature
        self.template = template             # 1-D launches
        self._shaped = shaped                # Shape -> the template of a 2-D/3-D launch
        self._templates: dict[Shape, KernelTemplate] = {}
        self.symbols: dict[str, bytes] = {}   # the Module's set_symbol contents, by name
        self.engine = engine                 # the default of __call__ (the Module's)
        self.sources: dict | None = None   # set by Module: source, PTX, block origins

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def params(self):
        return self.signature.params

    @property
    def program(self) -> Program:
        """The program template (parameters still placeholders)."""
        return self.template.program

    def template_for(self, shape: Shape) -> KernelTemplate:
        """The template of a launch shape: the 1-D one, or one lowered for the shape's
        dimensions (threadIdx.y etc. computed from the machine's linear thread index)."""
        if shape.linear or self._shaped is None:
            return self.template
        if shape not in self._templates:
            self._templates[shape] = self._shaped(shape)
        return self._templates[shape]

    def link(self, grid, block, args, printf_words: int | None = None
             ) -> tuple[Program, list[int], dict, list]:
        """(program, initial global memory, layout, arrays in parameter order)."""
        return self._link(grid, block, args, printf_words)[:4]

    def _link(self, grid, block, args, printf_words: int | None = None,
              shared_mem: int = 0):
        """link's results and the launch's printf buffer (None: the kernel has no printf
        or assert). The data is linked into the model machine's memory where the launch
        and its data fit it (so the model can run it, and the interpreter bounds it
        alike), else into the ISA's."""
        shape = launch_shape(grid, block)
        template = self.template_for(shape)
        shared = -(-(template.shared_bytes + shared_mem) // 4) * 4 \
            + 4 * template.scratch_words(shape.threads)     # with the warp scratch
        if limits.fits_model(shape.ctas, shape.threads) and \
                shared <= limits.MODEL_SHARED_WORDS * 4:
            try:
                return self._link_into(limits.MODEL_MEMORY, shape, args, printf_words,
                                       shared_mem)
            except _MemoryFull:
                pass
        return self._link_into(limits.ISA_MEMORY, shape, args, printf_words, shared_mem)

    def _link_into(self, sizes: limits.MemorySizes, shape: Shape, args,
                   printf_words: int | None, shared_mem: int = 0):
        template = self.template_for(shape)
        global_words = sizes.global_words
        sites = template.stats.get("device_sites") or []
        reserve = printf_reserve(printf_words) if sites and printf_words is not None else 0
        limit = global_words - reserve
        params = self.signature.params
        if isinstance(args, dict):
            unknown = set(args) - {p.name for p in params}
            if unknown:
                raise LaunchError(f"{self.name}: no parameter named {sorted(unknown)}; it "
                                  f"takes {self.signature}")
            missing = [p.name for p in params if p.name not in args]
            if missing:
                raise LaunchError(f"{self.name}: missing argument(s) {missing}")
            args = [args[p.name] for p in params]
        args = list(args)
        if len(args) != len(params):
            raise LaunchError(f"{self.name} takes {len(params)} arguments ({self.signature}), "
                              f"got {len(args)}")
        memory = [0] * global_words
        values: dict[str, int] = {"ntid": shape.block[0], "nctaid": shape.grid[0]}
        layout: dict[str, tuple[int, int]] = {}
        placed: list[tuple[np.ndarray, int]] = []
        next_word = 0
        for k, (p, a) in enumerate(zip(params, args, strict=True)):
            if p.pointer:
                arr = self._array(p, a)
                base = self._alias(p, arr, placed, params, args)
                if base is None:
                    # 8-byte elements on 8 bytes, as a GPU's allocations are aligned
                    next_word += next_word % 2 if arr.itemsize == 8 else 0
                    base = next_word
                    words = words_of(arr)
                    next_word += words
                    if next_word > limit:
                        raise _MemoryFull(
                            f"{self.name}: the arrays need {self._words(params, args)} words "
                            f"of global memory; the machine has {global_words}"
                            + (f", {reserve} of them the printf buffer (printf_words, "
                               f"--printf-words)" if reserve else ""))
                    memory[base:base + words] = to_words(arr)
                    placed.append((arr, base))
                layout[p.name] = (base, words_of(arr))
                values[f"param:{k}"] = base * 4
            else:
                v = self._scalar(p, a)
                values[f"param:{k}"] = v & 0xFFFFFFFF
                values[f"param:{k}:hi"] = v >> 32    # a long long's high word
        next_word = self._place_globals(memory, values, next_word, template, limit)
        buffer = None
        top = global_words
        if sites:
            words = reserve or global_words - next_word
            if not reserve and words >= 3:
                words -= 1      # one guard word between the data and the printf buffer
            if words < 2:
                raise _MemoryFull(f"{self.name}: no global memory left for the printf "
                                  f"buffer (the arrays and variables take {next_word} of "
                                  f"{global_words} words; it needs at least 2)")
            buffer = Buffer(global_words - words, words, sites,
                            room=global_words - next_word)
            values.update(buffer.symbols())
            top = buffer.first
        values.update(template.scratch_symbols(shape.threads,
                                               template.shared_bytes + shared_mem))
        program = template.bind(values, shape.threads)
        program.arrays = self._allocations(layout, template, args, values)
        program.cuda = True
        program.free_words = tuple(range(next_word, top))
        program.memory_sizes = sizes
        return program, memory, layout, [a if p.pointer else None
                                         for p, a in zip(params, args, strict=True)], buffer

    def _alias(self, p, arr: np.ndarray, placed, params, args) -> int | None:
        """The word where `arr` already lives (the same array, or another view of exactly
        its bytes: an alias, as on a GPU), or None for a new array. Arrays that overlap
        only partly cannot be placed as they are in host memory: a LaunchError."""
        for other, w in placed:
            if other is arr or (other.ctypes.data == arr.ctypes.data
                                and other.nbytes == arr.nbytes):
                return w
            if np.shares_memory(other, arr):
                name = next(q.name for q, a in zip(params, args, strict=True)
                            if q.pointer and a is other)
                raise LaunchError(f"{self.name}: arguments {name} and {p.name} overlap in "
                                  f"memory without being the same array; pass one array "
                                  f"for aliases, or separate arrays")
        return None

    def _words(self, params, args) -> int:
        return sum(words_of(np.asarray(a)) for p, a in zip(params, args, strict=True)
                   if p.pointer)

    def _check_shared(self, shape: Shape, shared_mem) -> None:
        """The launch's dynamic shared memory (CuPy's shared_mem=, bytes): the extern
        __shared__ arrays' size, after the static ones, within the CTA's shared memory."""
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, int | np.integer) \
                or shared_mem < 0:
            raise LaunchError(f"shared_mem {shared_mem!r}: give a number of bytes (0 or more)")
        template = self.template_for(shape)
        limit = limits.SHARED_WORDS * 4
        if template.stats.get("dynamic_shared") and shared_mem == 0:
            raise LaunchError(f"{self.signature.where}: kernel {self.name} uses an extern "
                              f"__shared__ array sized at launch: give its size in bytes "
                              f"(shared_mem=N, qgpu run --shared-bytes N)")
        scratch = 4 * template.scratch_words(shape.threads)
        if -(-(template.shared_bytes + shared_mem) // 4) * 4 + scratch > limit:
            raise LaunchError(f"kernel {self.name}: {template.shared_bytes} bytes of static "
                              f"__shared__ data + {shared_mem} dynamic"
                              + (f" + {scratch} of warp_scratch (its 32-lane warp "
                                 f"operations, for {shape.threads} threads)" * bool(scratch))
                              + f" exceed the {limit} bytes of shared memory per CTA")

    def _allocations(self, layout: dict, template: KernelTemplate, args, values) -> tuple:
        """Each array argument's and __constant__/__device__ variable's range and the
        operands holding its base (interp.bounds: the interpreter faults on an access
        derived from it that leaves it)."""
        def sites(sym):
            return frozenset((r.block, r.stage, r.slot, r.src)
                             for r in template.relocs if r.sym == sym)
        out = []
        for k, (p, a) in enumerate(zip(self.signature.params, args, strict=True)):
            if p.pointer and p.name in layout:
                base, words = layout[p.name]
                out.append(Allocation(p.name, base, words, sites(f"param:{k}"),
                                      a.nbytes, a.itemsize))
        for var in self.template.stats.get("globals", []):
            if f"global:{var.name}" in values:
                out.append(Allocation(var.name, values[f"global:{var.name}"] // 4,
                                      -(-var.size // 4), sites(f"global:{var.name}"),
                                      var.size, var.elem_bytes))
        return tuple(out)

    def _place_globals(self, memory: list[int], values: dict, next_word: int,
                       template: KernelTemplate, limit: int) -> int:
        used = template.symbols()
        for var in self.template.stats.get("globals", []):
            if f"global:{var.name}" not in used:
                continue        # not the kernel's (printf's strings are read at compile time)
            words = -(-var.size // 4)
            if next_word + words > limit:
                raise _MemoryFull(f"{self.name}: no global memory left for __device__ "
                                   f"variable {var.name}")
            data = self.symbols.get(var.name) or b"".join(
                (v % (1 << (8 * var.elem_bytes))).to_bytes(var.elem_bytes, "little")
                for v in var.init or [])
            for i in range(0, min(len(data), 4 * words), 4):
                memory[next_word + i // 4] = int.from_bytes(data[i:i + 4].ljust(4, b"\0"),
                                                            "little")
            values[f"global:{var.name}"] = next_word * 4
            next_word += words
        return next_word

    def _array(self, p, a) -> np.ndarray:
        allowed = ("float32",) if p.dtype == "float32" else _WIDTH_DTYPES.get(p.bytes, ())
        want = " or ".join(allowed) if p.dtype else "any numpy"
        if not isinstance(a, np.ndarray):
            raise LaunchError(f"{self.name}: argument {p.name} ({p}) must be a numpy {want} "
                              f"array, got {type(a).__name__}")
        if p.dtype and (a.dtype.name not in allowed or a.ndim != 1):
            raise LaunchError(f"{self.name}: argument {p.name} ({p}) must be a 1-D {want} "
                              f"array, got {a.ndim}-D {a.dtype}")
        if not a.flags.c_contiguous:
            raise LaunchError(f"{self.name}: argument {p.name} must be contiguous")
        if a.size == 0:
            raise LaunchError(f"{self.name}: argument {p.name} is an empty array; every array "
                              f"gets words of the machine's global memory, so pass at least "
                              f"one element")
        return a

    def _scalar(self, p, a) -> int:
        """A scalar argument's bits (two words for a long long): a float's bit pattern, an
        integer range-checked against its C type (char, short, bool, int, long long and
        their unsigned twins; the lowering extends the narrow ones as PTX's ld.param)."""
        if p.dtype == "float32" and not isinstance(a, bool) \
                and isinstance(a, int | float | np.integer | np.floating):
            check_value(float(a), np.dtype("float32"), f"{self.name}: argument {p.name}",
                        str(p), LaunchError)
            return int(np.array([a], np.float32).view(np.uint32)[0])   # its bit pattern
        if isinstance(a, bool | np.bool_) and p.dtype == "bool":
            return int(a)
        if isinstance(a, bool) or not isinstance(a, int | np.integer):
            what = "a number" if p.dtype == "float32" else "an integer"
            raise LaunchError(f"{self.name}: argument {p.name} ({p}) must be {what}, got "
                              f"{type(a).__name__}")
        v = int(a)
        info = np.iinfo(np.uint8 if p.dtype == "bool" else p.dtype or "int32")
        lo, hi = (0, 1) if p.dtype == "bool" else (int(info.min), int(info.max))
        if not lo <= v <= hi:
            raise LaunchError(f"{self.name}: argument {p.name} = {v} does not fit {p.ctype}")
        return v & ((1 << 64) - 1 if info.bits == 64 else 0xFFFFFFFF)

    def __call__(self, grid, block, args, engine: str | None = None,
                 budget: int | None = None, shared_mem: int = 0,
                 printf_words: int | None = None) -> LaunchResult:
        prep = self.prepare(grid, block, args, engine, budget, shared_mem, printf_words)
        t0 = time.perf_counter()
        try:
            run = prep.runner(prep.program, prep.grid, prep.block, prep.memory, prep.budget)
        except Fault as fault:      # a failed assert's trap: its file:line and condition
            raise self.fault_error(prep, fault) from None
        return self.finish(prep, run, time.perf_counter() - t0)

    def launch_many(self, grid, block, arg_sets, engine: str | None = None,
                    budget: int | None = None, shared_mem: int = 0,
                    printf_words: int | None = None, errors: str = "raise",
                    **options) -> list:
        """One launch per argument set (each a tuple, list or dict, as `args` of a call),
        all of the same grid and block, run together where the engine can (the model:
        runtime.generate_many steps the launches in flight at once); see
        cuda.many.launch_many for `errors` and `options`. Returns their LaunchResults in
        order; each set's arrays receive its results, as after a call."""
        if isinstance(arg_sets, dict) or not hasattr(arg_sets, "__iter__"):
            raise LaunchError(f"{self.name}.launch_many takes a list of argument sets (each "
                              f"a tuple, list or dict), not {type(arg_sets).__name__}")
        return launch_many([(self, grid, block, args) for args in arg_sets], engine=engine,
                           budget=budget, shared_mem=shared_mem, printf_words=printf_words,
                           errors=errors, **options)

    def prepare(self, grid, block, args, engine: str | None = None,
                budget: int | None = None, shared_mem: int = 0,
                printf_words: int | None = None) -> Prepared:
        """Everything before the engine runs: the launch checked and linked (errors are
        raised here, before anything runs)."""
        shape = launch_shape(grid, block)
        self._check_shared(shape, shared_mem)
        if self.signature.max_threads is not None and shape.threads > \
                self.signature.max_threads:
            raise LaunchError(f"{self.signature.where}: kernel {self.name} has "
                              f"__launch_bounds__({self.signature.max_threads}); a block of "
                              f"{shape.threads} threads is refused, as a GPU refuses it")
        grid, block = shape.ctas, shape.threads
        args, budget = _launch_args(args), _budget(budget)
        engine = engine or self.engine
        runner = ENGINES.get(engine)
        if runner is None:
            raise LaunchError(f"unknown engine '{engine}' (registered: {sorted(ENGINES)}; the "
                              "model's engines register when qgpu.runtime is imported)")
        limits.check_launch_shape(grid, block)   # before linking: a clear error first
        if engine != "interp":
            self._refuse_native_floats(shape)
        program, memory, layout, arrays, buffer = self._link(shape.grid, shape.block, args,
                                                             printf_words, shared_mem)
        template = self.template_for(shape)
        program.shared_words = -(-(template.shared_bytes + shared_mem) // 4) \
            + template.scratch_words(shape.threads)
        return Prepared(self, shape, grid, block, args, engine, runner, budget, program,
                        memory, list(memory), layout, arrays, buffer)

    def fault_error(self, prep: Prepared, fault: Fault):
        """The error a launch that faulted raises (a failed assert: its file:line)."""
        return device_fault(fault, prep.buffer, prep.program, self.name, prep.shape)

    def finish(self, prep: Prepared, run: EngineRun, seconds: float) -> LaunchResult:
        """After the engine ran: the printed text, the arrays copied back, the result."""
        check_untouched(prep, run.memory, lambda: self._copy_back(prep.arrays, prep.layout,
                                                                  run.memory))
        printed = finish_buffer(prep.buffer, run.memory, self.name, prep.shape,
                                lambda: self._copy_back(prep.arrays, prep.layout,
                                                        run.memory))
        params, args = self.signature.params, prep.args
        return LaunchResult(self.name, prep.engine, prep.grid, prep.block, prep.program,
                            run.memory, run.events, run.trace, seconds, prep.layout,
                            initial=prep.initial,
                            signed={p.name: p.signed for p in params if p.pointer},
                            scalars=scalar_values(params, args),
                            sources=self.sources, margins=run.margins, expected=run.expected,
                            printed=printed)

    def _refuse_native_floats(self, shape: Shape) -> None:
        """The model runs float32 as integer code (cuda.softfloat); an operation with no
        integer lowering yet (sqrt) is refused, naming it and its source line; so is a
        kernel with register spills (the model has no local memory yet)."""
        template = self.template_for(shape)
        words = local_words(template.program)
        if words:
            raise ProgramError(f"kernel {self.name} ({self.signature.where}): "
                               f"{local_refusal(words)}")
        for b, blk in enumerate(template.program.blocks):
            ops = [ins.op for st in blk.stages for ins in st if ins.op in FLOAT_OPS]
            if ops:
                where = ", ".join(f"{f}:{n}" for f, n in
                                  template.stats["origins"][b]["source"]) or "?"
                raise ProgramError(f"{self.name} ({where}): float32 operation '{ops[0]}' "
                                   f"has no integer lowering for the model yet (it runs "
                                   f"add/sub/mul/fma/div, compares, min/max, rounding "
                                   f"and conversions); run it with engine='interp' "
                                   f"(--engine interp); docs/cuda.md, 'float32'")

    def _copy_back(self, arrays, layout, memory) -> None:
        """Final memory into each array the kernel may write (one that is, or aliases, a
        non-const pointer parameter); a read-only numpy array is left alone unless the
        kernel changed it, which is a LaunchError after every writable array has its
        results."""
        params = [(p, a) for p, a in zip(self.signature.params, arrays, strict=True)
                  if a is not None]
        may_write = {layout[p.name][0] for p, _ in params if not p.const}
        finals = {}
        for p, a in params:
            base, n = layout[p.name]
            finals[p.name] = from_words(memory[base:base + n], a)
            if base in may_write and a.flags.writeable:
                a[...] = finals[p.name]
        # bit for bit: a float array's NaN is not equal to itself
        refused = [p.name for p, a in params if finals[p.name].tobytes() != a.tobytes()]
        if refused:
            raise LaunchError(f"{self.name}: the kernel wrote to {', '.join(refused)}, passed "
                              f"as read-only (const parameter or non-writeable array); the "
                              f"other arrays hold their results")


class Module:
    """Compiled CUDA source: its kernels, lowered on first use. `engine` is the one its
    kernels launch on unless a call names another (qgpu.compile: the model). `source` is
    text or bytes (any encoding: clang reads bytes); when `filename` is a file holding
    exactly that source it is compiled in place, so its includes resolve beside it;
    `include_dirs` are searched too (clang's -I)."""

    def __init__(self, source: str | bytes, filename: str = "kernel.cu",
                 engine: str = "interp", include_dirs=()):
        if not isinstance(source, str | bytes) or not isinstance(filename, str | bytes):
            raise CompileError(f"qgpu.compile takes CUDA C source (text or bytes) and a file "
                               f"name, not {type(source).__name__}")
        if not isinstance(engine, str):
            raise LaunchError(f"engine must be a name (a str), not {type(engine).__name__}")
        self.source = source if isinstance(source, str) else source.decode("utf-8", "replace")
        self.filename = os.fsdecode(filename)
        self.engine = engine
        includes = include_folders(include_dirs)
        self._compiled = (source, filename, includes)   # set_symbol asks its types
        self.signatures = parse_kernels(source, filename, includes)
        self.ptx = compile_to_ptx(source, filename, includes)
        self.ptx_module = ptx.parse(self.ptx)
        self._kernels: dict[str, Kernel] = {}
        self._symbols: dict[str, bytes] = {}

    def set_symbol(self, name: str, values, what: str | None = None) -> None:
        """Fill a __constant__ or __device__ variable before the next launches, as the
        host's cudaMemcpyToSymbol does: `values` is a numpy array (its bytes, in the
        machine's byte order) or a list of numbers stored as the variable's element type
        (a float table's as float32, an int table's checked against int's range; a
        variable of another type takes 32-bit integers); at most the variable's size.
        Errors start with `what` (default: the name; qgpu run: `--symbol NAME`)."""
        self._symbols[name] = self.symbol_data(name, values, what or name)

    def symbol_element(self, name: str) -> tuple[str, str] | None:
        """A variable's element type from the source, (numpy dtype, C type), or None."""
        return variable_elements(*self._compiled).get(name)

    def symbol_data(self, name: str, values, what: str) -> bytes:
        """set_symbol's bytes for `values` (cuda.symbols); errors start with `what`."""
        return symbol_data(self.ptx_module.variables, variable_elements(*self._compiled),
                           self.filename, name, values, what)

    @property
    def kernel_names(self) -> list[str]:
        return [s.name for s in self.signatures]

    def get_function(self, name: str) -> Kernel:
        if not isinstance(name, str):
            raise LaunchError(f"get_function takes a kernel's name (a str; kernels: "
                              f"{', '.join(self.kernel_names) or 'none'}), not "
                              f"{type(name).__name__}")
        sig = find_kernel(self.signatures, name, self.filename)
        if sig.name in self._kernels:
            return self._kernels[sig.name]
        if sig.problem:
            raise CompileError(sig.problem)
        ptx_name = ptx_entry(sig.mangled, self.ptx_module.functions)
        if ptx_name not in self.ptx_module.functions:
            raise CompileError(f"{sig.where}: kernel {sig.name}: clang emitted no PTX entry "
                               f"{ptx_name} for it (qgpu compiles pointers as 32-bit)")
        n_ptx = len(self.ptx_module.functions[ptx_name].params)
        if n_ptx != len(sig.params):
            raise CompileError(f"{sig.where}: {sig.name} has {len(sig.params)} "
                               f"parameters in the source but {n_ptx} in PTX")

        def build(shape: Shape | None = None) -> KernelTemplate:
            try:
                template = compile_kernel(self.ptx_module, ptx_name, sig.name, shape)
            except CompileError as exc:
                text = str(exc).removeprefix(f"kernel {sig.name}: ")
                for i in reversed(range(len(sig.params))):   # PTX's parameter names
                    text = text.replace(f"parameter {ptx_name}_param_{i}",
                                        f"parameter '{sig.params[i]}'")
                if sig.where not in text or f"kernel {sig.name}" not in text:
                    text = f"kernel {sig.name} ({sig.where}): {text}"
                raise CompileError(text) from None
            template.stats["globals"] = [v for v in self.ptx_module.variables
                                         if v.space in ("global", "const")]
            return template

        kernel = Kernel(sig, build(), self.engine, build)
        kernel.symbols = self._symbols
        kernel.sources = {"source": self.source, "filename": self.filename,
                          "ptx": self.ptx, "origins": kernel.template.stats["origins"]}
        self._kernels[sig.name] = kernel
        return kernel


def compile(source: str | bytes, filename: str = "kernel.cu",  # noqa: A001
            engine: str = "interp", include_dirs=()) -> Module:
    """Compile CUDA C source (see Module)."""
    return Module(source, filename, engine, include_dirs)
