"""isa.limits: the machine's constants, the single source of truth for every limit.

Every other stage (interpreter, front end, protocol, circuit) imports these; docs/isa.md
is checked against them by tests/docgen/test_isa_doc.py.
"""

from qgpu.errors import LaunchError

WORD_BITS = 32
WORD_MASK = (1 << WORD_BITS) - 1

LANES = 4                 # lanes per warp (SIMT)
REGS = 16                 # registers per lane; r0 always reads zero
ZERO_REG = 0
STAGES = 4                # dependent stages per block
SLOTS = 1                 # independent operations per stage (VLIW; what the circuit computes)
ROM_BLOCKS = 128          # program ROM, in blocks; block 0 is the entry
BLOCK_BITS = 7            # bits of a block number (ROM_BLOCKS = 2 ** BLOCK_BITS)
MAX_BLOCK_WRITES = 3      # memory writes (stores, atomics) per block

GLOBAL_WORDS = 128        # 32-bit words of global memory
SHARED_WORDS = 32         # 32-bit words of shared memory per CTA

MAX_CTAS = 4              # CTAs per launch (gridDim.x)
MAX_THREADS_PER_CTA = 16  # threads per CTA (blockDim.x)
MAX_WARPS = 4             # warps per launch, all CTAs together

DEFAULT_BLOCK_BUDGET = 200_000   # block executions before a launch is declared runaway


def flat_address(space: str, word: int, cta: int) -> int:
    """The machine-wide word index of a memory word: global words first, then each
    CTA's shared memory. Protocol address tokens and the circuit's memory table use it."""
    if space == "global":
        return word
    return GLOBAL_WORDS + cta * SHARED_WORDS + word


FLAT_WORDS = GLOBAL_WORDS + MAX_CTAS * SHARED_WORDS


def warps_per_cta(block: int) -> int:
    """Warps of a CTA of `block` threads (the last one partly filled)."""
    return -(-block // LANES)


def launch_warps(grid: int, block: int) -> int:
    """Warps of a launch of `grid` CTAs of `block` threads, all CTAs together."""
    return grid * warps_per_cta(block)


def check_launch_shape(grid: int, block: int) -> None:
    """LaunchError unless the machine runs `grid` CTAs of `block` threads (its CTA, thread
    and warp limits; what the compiled model runs is checked by circuit.machine.spec)."""
    if not 1 <= grid <= MAX_CTAS:
        raise LaunchError(f"grid of {grid} CTAs; the machine runs 1..{MAX_CTAS}")
    if not 1 <= block <= MAX_THREADS_PER_CTA:
        raise LaunchError(f"block of {block} threads; the machine runs "
                          f"1..{MAX_THREADS_PER_CTA} per CTA")
    warps = launch_warps(grid, block)
    if warps > MAX_WARPS:
        raise LaunchError(f"grid {grid} x block {block} needs {warps} warps; the machine "
                          f"runs at most {MAX_WARPS}")


def u32(x: int) -> int:
    return x & WORD_MASK


def s32(x: int) -> int:
    x &= WORD_MASK
    return x - (1 << 32) if x & 0x80000000 else x


# -- per-thread local memory (register spills, qgpu/cuda/spill.py) -------------------------
# ld.local / st.local: word loads and stores at byte addresses 0 .. 4 * LOCAL_WORDS - 4 of a
# thread's own words, which no other thread sees. The interpreter runs them; the model
# machine has no local memory yet (circuit.machine.spec refuses such a program).
LOCAL_WORDS = 64          # 32-bit words of local memory per thread
