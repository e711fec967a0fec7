"""machine.families: how an operation family plugs into the ALU of one position and lane.

The ALU's own units (`alu`: operands, low, high) compute the basic families. Every other
family (multiply, shifts, min/max, warp operations, atomics, ...) lives in its own module
and is listed in `build.FAMILIES`: a builder gets a `StageView` of the position (every lane's
operands, low outputs, memory words and loaded reads) and returns an `Extension`: the
signals its part of the high MLP reads (built by the family's own earlier units, which
the scheduler places by dependency) and a body that adds the family's steps to the
result bits, each gated by the family's operation bits so that a disabled family adds
exactly 0. A family whose operations an instruction position can never hold may return
None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from qgpu.circuit.ir import Circuit, Signal
from qgpu.circuit.machine.bookkeeping import Bookkeeping
from qgpu.circuit.machine.logic import Ctx
from qgpu.circuit.machine.rom import Instruction


@dataclass
class StageView:
    """One instruction position inside its stage, as the families see it."""

    c: Circuit
    bk: Bookkeeping
    ins: Instruction
    operands: dict[int, Signal]  # lane -> a | b | c (96 bits) | ready bit
    low: dict[int, Signal]  # lane -> alu_low's bits
    words: dict[int, Signal]  # lane -> global memory word one-hot (none: no access)
    loaded: dict[int, Signal]  # lane -> raw read of that word (READ_SCALE per bit)
    extra: dict = field(default_factory=dict)  # what other parts of the machine share


HighBody = Callable[[Ctx, list[int]], None]  # (ctx, result dims) -> adds steps


@dataclass
class Extension:
    inputs: list[Signal]  # signals the high body reads (besides operands and ops)
    high: HighBody


Builder = Callable[[StageView, int], "Extension | None"]  # (view, lane); build.FAMILIES
