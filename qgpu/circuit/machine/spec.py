"""machine.spec: what a version of the machine circuit runs, and the host-side check that
rejects (with a clear error, before any token is fed) programs and launches outside it.

The circuit computes `slots` operations per stage (positions p = stage * isa SLOTS + slot
with slot < slots, the protocol's numbering), every warp and CTA of the ISA, and the
operations in `SUPPORTED_OPS`. Nothing is ever run elsewhere in its place: an
unsupported program is an error, not a fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.errors import LaunchError, ProgramError
from qgpu.isa import limits
from qgpu.isa.ops import FLOAT_OPS
from qgpu.isa.program import Program, local_refusal, local_words

ALU_OPS = ("add", "sub", "and", "or", "xor", "mov", "selp", "popc", "clz", "brev",
           "seteq", "setne", "setlt.s", "setle.s", "setgt.s", "setge.s",
           "setlt.u", "setle.u", "setgt.u", "setge.u")
SREG_OPS = ("tid", "ntid", "ctaid", "nctaid", "laneid", "warpid")
MEMORY_OPS = ("ld.global", "st.global")
# Families in their own modules (machine.families): each adds its operations here.
MULTIPLY_OPS: tuple[str, ...] = ("mul",)  # machine.multiply
SHIFT_OPS: tuple[str, ...] = ("shl", "shr.u", "shr.s")  # machine.shift
MINMAX_OPS: tuple[str, ...] = ("min.s", "max.s", "min.u", "max.u")  # machine.minmax
WARP_OPS = ("shfl.up", "shfl.down", "shfl.bfly", "shfl.idx", "ballot")  # machine.warp
ATOMIC_OPS: tuple[str, ...] = tuple(  # machine.atomics, machine.atomics_order
    f"atom.{space}.{fn}" for space in ("global", "shared")
    for fn in ("add", "exch", "and", "or", "xor", "min.s", "min.u", "max.s", "max.u", "cas"))
SHARED_OPS: tuple[str, ...] = ("ld.shared", "st.shared")  # machine.shared
SUPPORTED_OPS = (ALU_OPS + SREG_OPS + MEMORY_OPS + MULTIPLY_OPS + SHIFT_OPS + MINMAX_OPS
                 + WARP_OPS + ATOMIC_OPS + SHARED_OPS)
FAMILY_GROUPS = (MULTIPLY_OPS, SHIFT_OPS, MINMAX_OPS, WARP_OPS, ATOMIC_OPS, SHARED_OPS)
ADDRESSED_OPS = tuple(op for op in SUPPORTED_OPS if op.split(".")[0] in ("ld", "st", "atom"))
RECORD_OPS = tuple(op for op in ADDRESSED_OPS if not op.startswith("ld."))  # write memory
IMM_OPERANDS = 3  # immediates of operands a, b, c (the offset comes with memory ops)
OFFSET = 3  # IMM field of the address offset
MAX_RECORDS = 12  # memory records per block (the record counter's limit)


@dataclass(frozen=True)
class MachineSpec:
    slots: int = 1  # operations per stage the circuit computes
    stages: int = limits.STAGES
    warps: int = limits.MODEL_MAX_WARPS  # the circuit schedules every warp the ISA has
    # The operations compiled in (None: every supported one). A subset makes a smaller
    # machine, e.g. one that runs given kernels only; programs outside it are refused.
    ops: tuple[str, ...] | None = None
    # machine.faults: the model detects misaligned and out-of-bounds accesses and writes
    # the TRAP record itself, and so for lanes waiting at different barriers
    # (machine.barriers). It costs 2 layers and ~125 residual dims (45 layers, hidden
    # 2,133 instead of 43 / 2,009), so the runtime's machine has it (runtime.compiled's
    # DEFAULT_SPEC) and a merge leaves it out unless asked (`qgpu merge --detect-faults`):
    # the base's 2,048 dims hold the machine without it.
    detect_faults: bool = False

    def __post_init__(self):
        if not 1 <= self.slots <= limits.SLOTS:
            raise ValueError(f"slots must be in 1..{limits.SLOTS}")
        if not 1 <= self.stages <= limits.STAGES:
            raise ValueError(f"stages must be in 1..{limits.STAGES}")
        if self.warps != limits.MODEL_MAX_WARPS:
            raise ValueError(f"warps must be {limits.MODEL_MAX_WARPS}: the circuit schedules every "
                             f"warp of the ISA")
        if self.ops is not None:
            unknown = sorted(set(self.ops) - set(SUPPORTED_OPS))
            if unknown:
                raise ValueError(f"operations {unknown} are not in the model machine "
                                 f"(it supports {', '.join(SUPPORTED_OPS)})")
            # a family comes whole (its units serve all its ops); canonical order, so equal
            # subsets are equal specs (and share a cache entry)
            ops = set(self.ops)
            for group in FAMILY_GROUPS:
                if ops & set(group):
                    ops |= set(group)
            object.__setattr__(self, "ops", tuple(o for o in SUPPORTED_OPS if o in ops))

    @property
    def op_names(self) -> tuple[str, ...]:
        """The compiled-in operations, in SUPPORTED_OPS order."""
        return SUPPORTED_OPS if self.ops is None else self.ops

    @classmethod
    def for_programs(cls, programs, **fields) -> MachineSpec:
        """The smallest op set that runs these programs (their operations plus the
        always-present basics: add, mov)."""
        used = {ins.op for prog in programs for blk in prog.blocks for st in blk.stages
                for ins in st} | {"add", "mov"}
        return cls(ops=tuple(sorted(used)), **fields)

    @property
    def positions(self) -> list[int]:
        """Instruction positions p = stage * SLOTS + slot, in stage order."""
        return [k * limits.SLOTS + s for k in range(self.stages) for s in range(self.slots)]

    def stage_of(self, p: int) -> int:
        return p // limits.SLOTS

    def earlier(self, p: int) -> list[int]:
        """Positions whose results an operand at p may forward (earlier stages)."""
        return [q for q in self.positions if self.stage_of(q) < self.stage_of(p)]

    def describe(self) -> dict:
        d = {"slots": self.slots, "stages": self.stages, "warps": self.warps,
             "ops": list(self.op_names)}
        if self.detect_faults:  # absent (False) in the records of earlier machines
            d["detect_faults"] = True
        return d


def check_launch(spec: MachineSpec, program: Program, grid: int, block: int) -> None:
    """Raise ProgramError / LaunchError when the circuit cannot run this launch (the
    model machine runs a subset of the ISA's sizes: isa.limits' MODEL_* figures; the
    interpreter runs the rest)."""
    elsewhere = "; the interpreter runs it (--engine interp, engine='interp')"
    if grid > limits.MODEL_MAX_CTAS:
        raise LaunchError(f"grid of {grid} CTAs; the model machine runs 1.."
                          f"{limits.MODEL_MAX_CTAS}{elsewhere}")
    if block > limits.MODEL_MAX_THREADS_PER_CTA:
        raise LaunchError(f"block of {block} threads; the model machine runs 1.."
                          f"{limits.MODEL_MAX_THREADS_PER_CTA} per CTA{elsewhere}")
    warps = limits.launch_warps(grid, block)
    if warps > spec.warps:
        raise LaunchError(f"the model machine runs {spec.warps} warp(s); grid {grid} x "
                          f"block {block} needs {warps}{elsewhere}")
    if len(program.blocks) > limits.MODEL_ROM_BLOCKS:
        raise ProgramError(f"program of {len(program.blocks)} blocks; the model machine's "
                           f"ROM holds {limits.MODEL_ROM_BLOCKS}{elsewhere}")
    if program.memory_sizes is not None and program.memory_sizes != limits.MODEL_MEMORY:
        sizes = program.memory_sizes
        raise ProgramError(f"the launch's data is linked into {sizes.global_words} words of "
                           f"global memory ({sizes.shared_words} shared words per CTA); the "
                           f"model machine holds {limits.MODEL_GLOBAL_WORDS} "
                           f"({limits.MODEL_SHARED_WORDS}){elsewhere}")
    words = local_words(program)
    if words:
        raise ProgramError(f"the program {local_refusal(words)}")
    for b, blk in enumerate(program.blocks):
        if len(blk.stages) > spec.stages:
            raise ProgramError(f"block {b}: {len(blk.stages)} stages; the model machine "
                               f"computes {spec.stages}")
        for k, stage in enumerate(blk.stages):
            if len(stage) > spec.slots:
                raise ProgramError(f"block {b} stage {k}: {len(stage)} operations; the "
                                   f"model machine computes {spec.slots} per stage")
            for ins in stage:
                if ins.op in FLOAT_OPS:   # the front end lowers the others to integers
                    raise ProgramError(f"block {b} stage {k}: float32 operation '{ins.op}' "
                                       f"has no integer lowering for the model yet (the "
                                       f"model runs add/sub/mul/fma/div, compares, min/max, "
                                       f"rounding and conversions); it runs on the interpreter "
                                       f"(engine='interp', --engine interp; docs/cuda.md, "
                                       f"'float32')")
                if ins.op not in spec.op_names:
                    what = "yet" if ins.op not in SUPPORTED_OPS else "compiled in this spec"
                    raise ProgramError(f"block {b} stage {k}: operation '{ins.op}' is not "
                                       f"in the model machine {what} (it runs "
                                       f"{', '.join(spec.op_names)})")
        stores = sum(1 for st in blk.stages for ins in st if ins.op in RECORD_OPS)
        if stores * limits.LANES > MAX_RECORDS:
            raise ProgramError(f"block {b}: {stores} stores or atomics may write "
                               f"{stores * limits.LANES} words; the model machine emits at most "
                               f"{MAX_RECORDS} memory records per block")
