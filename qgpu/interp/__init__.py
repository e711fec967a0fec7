"""interp: the reference interpreter, the oracle of the whole project. It executes
machine programs with PTX's exact 32-bit semantics, SIMT per-lane PCs (min-PC
reconvergence), CTA barriers, atomics in a defined order, shuffles and votes, and records
one event per executed block, from which qgpu.protocol derives the expected token trace.

Owns: the reference semantics. May import: isa, errors.
"""

from qgpu.interp.simt import BlockEvent, InterpRun, Machine, run_launch

__all__ = ["BlockEvent", "InterpRun", "Machine", "run_launch"]
