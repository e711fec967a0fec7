"""isa: the machine definition, the single source of truth for constants, the native
instruction set, the block format, programs, limits and the assembly text format.
docs/isa.md is the written spec; tests check it against these tables.

Owns: the machine's definition. May import: errors only. Imported by every stage.
"""

from qgpu.isa import limits
from qgpu.isa.ops import OPS, SPECIAL_REGS, TERMINATORS, OpSpec
from qgpu.isa.program import (
    Bar,
    Block,
    Br,
    Exit,
    Imm,
    Instr,
    Jmp,
    Program,
    Reg,
    liveness,
    successors,
    validate,
)

__all__ = ["limits", "OPS", "SPECIAL_REGS", "TERMINATORS", "OpSpec", "Bar", "Block", "Br",
           "Exit", "Imm", "Instr", "Jmp", "Program", "Reg", "liveness", "successors",
           "validate"]
