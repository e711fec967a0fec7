"""machine.spec: what a version of the machine circuit runs, and the host-side check that
rejects (with a clear error, before any token is fed) programs and launches outside it.

The circuit computes `slots` operations per stage (positions p = stage * isa SLOTS + slot
with slot < slots, the protocol's numbering), one warp, and the operations in
`SUPPORTED_OPS`. Nothing is ever run elsewhere in its place: an unsupported program is an
error, not a fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.errors import LaunchError, ProgramError
from qgpu.isa import machine as M
from qgpu.isa.program import Bar, Program

ALU_OPS = ("add", "sub", "and", "or", "xor", "mov", "selp", "popc", "clz", "brev",
           "seteq", "setne", "setlt.s", "setle.s", "setgt.s", "setge.s",
           "setlt.u", "setle.u", "setgt.u", "setge.u")
SREG_OPS = ("tid", "ntid", "ctaid", "nctaid", "laneid", "warpid")
MEMORY_OPS = ("ld.global", "st.global")
# Families in their own modules (machine.families): each adds its operations here.
MULTIPLY_OPS: tuple[str, ...] = ()  # machine.multiply
SHIFT_OPS: tuple[str, ...] = ()  # machine.shift
MINMAX_OPS: tuple[str, ...] = ()  # machine.minmax
WARP_OPS = ("shfl.up", "shfl.down", "shfl.bfly", "shfl.idx", "ballot")  # machine.warp
ATOMIC_OPS: tuple[str, ...] = ()  # machine.atomics
SHARED_OPS: tuple[str, ...] = ()  # machine.shared
SUPPORTED_OPS = (ALU_OPS + SREG_OPS + MEMORY_OPS + MULTIPLY_OPS + SHIFT_OPS + MINMAX_OPS
                 + WARP_OPS + ATOMIC_OPS + SHARED_OPS)
IMM_OPERANDS = 3  # immediates of operands a, b, c (the offset comes with memory ops)
OFFSET = 3  # IMM field of the address offset
MAX_RECORDS = 12  # memory records per block (the record counter's limit)


@dataclass(frozen=True)
class MachineSpec:
    slots: int = 1  # operations per stage the circuit computes
    stages: int = M.STAGES
    warps: int = 1

    def __post_init__(self):
        if not 1 <= self.slots <= M.SLOTS:
            raise ValueError(f"slots must be in 1..{M.SLOTS}")
        if not 1 <= self.stages <= M.STAGES:
            raise ValueError(f"stages must be in 1..{M.STAGES}")

    @property
    def positions(self) -> list[int]:
        """Instruction positions p = stage * SLOTS + slot, in stage order."""
        return [k * M.SLOTS + s for k in range(self.stages) for s in range(self.slots)]

    def stage_of(self, p: int) -> int:
        return p // M.SLOTS

    def earlier(self, p: int) -> list[int]:
        """Positions whose results an operand at p may forward (earlier stages)."""
        return [q for q in self.positions if self.stage_of(q) < self.stage_of(p)]

    def describe(self) -> dict:
        return {"slots": self.slots, "stages": self.stages, "warps": self.warps,
                "ops": list(SUPPORTED_OPS)}


def check_launch(spec: MachineSpec, program: Program, grid: int, block: int) -> None:
    """Raise ProgramError / LaunchError when the circuit cannot run this launch."""
    warps = grid * -(-block // M.LANES)
    if warps > spec.warps:
        raise LaunchError(f"the model machine runs {spec.warps} warp(s); grid {grid} x "
                          f"block {block} needs {warps}")
    for b, blk in enumerate(program.blocks):
        if len(blk.stages) > spec.stages:
            raise ProgramError(f"block {b}: {len(blk.stages)} stages; the model machine "
                               f"computes {spec.stages}")
        for k, stage in enumerate(blk.stages):
            if len(stage) > spec.slots:
                raise ProgramError(f"block {b} stage {k}: {len(stage)} operations; the "
                                   f"model machine computes {spec.slots} per stage")
            for ins in stage:
                if ins.op not in SUPPORTED_OPS:
                    raise ProgramError(f"block {b} stage {k}: operation '{ins.op}' is not "
                                       f"in the model machine yet (it runs "
                                       f"{', '.join(SUPPORTED_OPS)})")
        stores = sum(1 for st in blk.stages for ins in st if ins.op == "st.global")
        if stores * M.LANES > MAX_RECORDS:
            raise ProgramError(f"block {b}: {stores} stores may write {stores * M.LANES} "
                               f"words; the model machine emits at most {MAX_RECORDS} memory "
                               f"records per block")
        if isinstance(blk.terminator, Bar):
            raise ProgramError(f"block {b}: barriers are not in the model machine yet")
