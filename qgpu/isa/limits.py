"""isa.limits: the machine's constants, the single source of truth for every limit.

Every other stage (interpreter, front end, protocol, circuit) imports these; docs/isa.md
is checked against them by tests/docgen/test_isa_doc.py.
"""

from dataclasses import dataclass

from qgpu.errors import LaunchError

WORD_BITS = 32
WORD_MASK = (1 << WORD_BITS) - 1

LANES = 4                 # lanes per warp (SIMT)
REGS = 16                 # registers per lane; r0 always reads zero
ZERO_REG = 0
STAGES = 4                # dependent stages per block
SLOTS = 1                 # independent operations per stage (VLIW; what the circuit computes)
ROM_BLOCKS = 1024         # program ROM, in blocks; block 0 is the entry
BLOCK_BITS = 10           # bits of a block number (ROM_BLOCKS = 2 ** BLOCK_BITS)
MAX_BLOCK_WRITES = 3      # memory writes (stores, atomics) per block

GLOBAL_WORDS = 16_384     # 32-bit words of global memory (64 KB)
SHARED_WORDS = 12_288     # 32-bit words of shared memory per CTA (48 KB, CUDA's static limit)

MAX_THREADS_PER_CTA = 1024  # threads per CTA (blockDim.x * .y * .z), as CUDA's
MAX_CTAS = 1 << 24          # CTAs per launch, all dimensions together (the linear ctaid;
#                             CTAs run one after another, so a grid costs blocks, not room)

DEFAULT_BLOCK_BUDGET = 200_000   # block executions before a launch is declared runaway,
BUDGET_PER_WARP = 4_000          # or this many per warp of the launch where that is more

# -- the compiled model machine (v5) --------------------------------------------------
# What the Qwen3.5 weights of qgpu.circuit run today: a subset of the ISA's sizes. The
# interpreter runs every launch the ISA allows; a launch or program past these sizes is
# refused on the model by name (circuit.machine.spec.check_launch), never run there.
MODEL_ROM_BLOCKS = 128       # program ROM rows of the model
MODEL_BLOCK_BITS = 7         # bits of a block number in the protocol's tokens
MODEL_GLOBAL_WORDS = 128     # global words the model's memory table holds
MODEL_SHARED_WORDS = 32      # shared words per CTA on the model
MODEL_MAX_CTAS = 4           # CTAs per launch on the model
MODEL_MAX_THREADS_PER_CTA = 16  # threads per CTA on the model
MODEL_MAX_WARPS = 4          # warps per launch on the model, all CTAs together


def model_flat_address(space: str, word: int, cta: int) -> int:
    """The model machine's word index of a memory word: global words first, then each
    CTA's shared memory. Protocol address tokens and the circuit's memory table use it."""
    if space == "global":
        return word
    return MODEL_GLOBAL_WORDS + cta * MODEL_SHARED_WORDS + word


MODEL_FLAT_WORDS = MODEL_GLOBAL_WORDS + MODEL_MAX_CTAS * MODEL_SHARED_WORDS


@dataclass(frozen=True)
class MemorySizes:
    """The words of a launch's memory spaces: the ISA's, or the model machine's (a launch
    linked for the model runs on the interpreter with the same bounds, so both fault
    alike)."""
    global_words: int
    shared_words: int

    def words(self, space: str) -> int:
        return self.global_words if space == "global" else self.shared_words


ISA_MEMORY = MemorySizes(GLOBAL_WORDS, SHARED_WORDS)
MODEL_MEMORY = MemorySizes(MODEL_GLOBAL_WORDS, MODEL_SHARED_WORDS)


def warps_per_cta(block: int) -> int:
    """Warps of a CTA of `block` threads (the last one partly filled)."""
    return -(-block // LANES)


def launch_warps(grid: int, block: int) -> int:
    """Warps of a launch of `grid` CTAs of `block` threads, all CTAs together."""
    return grid * warps_per_cta(block)


def default_budget(grid: int, block: int) -> int:
    """The interpreter's block budget for a launch when none is given: a big launch may
    run as long per warp as a small one."""
    return max(DEFAULT_BLOCK_BUDGET, BUDGET_PER_WARP * launch_warps(grid, block))


def check_launch_shape(grid: int, block: int) -> None:
    """LaunchError unless the ISA runs `grid` CTAs of `block` threads (what the compiled
    model runs is checked by circuit.machine.spec)."""
    if not 1 <= grid <= MAX_CTAS:
        raise LaunchError(f"grid of {grid} CTAs; the machine runs 1..{MAX_CTAS:,} per launch")
    if not 1 <= block <= MAX_THREADS_PER_CTA:
        raise LaunchError(f"block of {block} threads; the machine runs "
                          f"1..{MAX_THREADS_PER_CTA} per CTA")


def fits_model(grid: int, block: int) -> bool:
    """Whether a launch's shape is one the compiled model machine runs."""
    return (grid <= MODEL_MAX_CTAS and block <= MODEL_MAX_THREADS_PER_CTA
            and launch_warps(grid, block) <= MODEL_MAX_WARPS)


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
