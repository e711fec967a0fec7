"""interp.simt: the reference interpreter. Plain, obviously right code: Python ints,
one lane at a time, no cleverness. It defines the machine's behaviour (docs/isa.md).

Scheduling (deterministic, and what the model's scheduler computes too):
  * CTAs run one after another, in ctaid order (CUDA orders no CTAs; a GPU runs them in
    waves), each with its own shared memory;
  * within the CTA, the running warp is the lowest-numbered warp with a running lane:
    a warp runs until every lane of it waits at a barrier or has exited, then the next;
  * a warp runs the block with the smallest PC among its running lanes; the active
    mask is the running lanes at that PC (min-PC reconvergence);
  * a lane that ends a block with `bar T` waits; when no lane of its CTA is running any
    more, every waiting lane of the CTA resumes at its target. Exited lanes do not take
    part. Lanes waiting at different barriers (divergent barriers) are a fault;
  * `bar.group T` is the same for the lane's group (32 consecutive threads of the CTA,
    8 warps): when no lane of the group runs and all its waiting lanes wait there, they
    resume at T (the CTA's release count does not change; the group's does).
This is the order v5's model computes for its 4 warps, so a launch the model runs has
the same events on both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from qgpu.errors import LaunchError, MachineError
from qgpu.interp.bounds import Bounds, misaligned
from qgpu.interp.races import ATOMIC, READ, WRITE, SharedRaces
from qgpu.isa import limits
from qgpu.isa.faults import Fault, Trap, memory_kind
from qgpu.isa.ops import ATOMIC_FNS
from qgpu.isa.program import GROUP_THREADS, Bar, Br, Exit, Imm, Instr, Jmp, Program

RUNNING, WAITING, EXITED, ABSENT = "running", "waiting", "exited", "absent"


class MemoryWord(NamedTuple):
    """A word of memory: its space ("global" or "shared"), the CTA (for shared) and its
    word index in the space (protocol.trace turns it into the model's flat address)."""
    space: str
    cta: int
    word: int


@dataclass
class BlockEvent:
    """What one executed block did: the protocol turns this into trace tokens."""
    warp: int
    block: int
    active: tuple[int, ...]                       # active lanes, ascending
    writeback: list[tuple[int, dict[int, int]]]   # (register, {lane: value}) ascending reg
    mem_writes: list[tuple[MemoryWord, int]]      # (word, value after the op)
    branch_taken: tuple[int, ...] | None = None   # br: active lanes that took the branch
    epoch: int = 0                                # barriers the CTA has released so far
    trap: Trap | None = None                      # the fault that ended the launch here


@dataclass
class InterpRun:
    """What the interpreter returns for a launch: final global and shared memory, one
    event per executed block (protocol.expected_trace makes the trace of them)."""

    memory: list[int]
    shared: list[list[int]]       # each CTA's shared memory at its end
    events: list[BlockEvent] = field(default_factory=list)

    @property
    def blocks_executed(self) -> int:
        return len(self.events)

    instructions_executed: int = 0


class Warp:
    def __init__(self, index: int, cta: int, warp_in_cta: int, first_tid: int, ntid: int):
        self.index, self.cta, self.warp_in_cta = index, cta, warp_in_cta
        self.regs = [[0] * limits.REGS for _ in range(limits.LANES)]
        self.pc = [0] * limits.LANES
        self.tid = [first_tid + lane for lane in range(limits.LANES)]
        self.status = [RUNNING if t < ntid else ABSENT for t in self.tid]
        self.scope = ["cta"] * limits.LANES     # the scope of the barrier a lane waits at
        self.group = first_tid // GROUP_THREADS

    def running(self) -> list[int]:
        return [lane for lane in range(limits.LANES) if self.status[lane] == RUNNING]


def budget_error(blocks: int) -> MachineError:
    """The error of a launch that would run more than its budget of `blocks` blocks (the
    interpreter's and the model's, word for word)."""
    return MachineError(f"block budget exceeded: {blocks} blocks executed and the launch "
                        f"has not finished; a kernel that runs longer needs a larger budget "
                        f"(--budget N, budget=N), one that never ends (e.g. while (1) {{}}) "
                        f"stops here")


class _MemoryTrap(Exception):
    """Inside a block: a memory operation faulted (run() turns it into a Fault)."""

    def __init__(self, kind: str, address: int, lane: int, position: int, op: str,
                 detail: str = ""):
        super().__init__(kind)
        self.kind, self.address, self.lane, self.position, self.op, self.detail = \
            kind, address, lane, position, op, detail


class Machine:
    """One launch of a program. `run()` executes it to the end. `sizes` bounds its
    memory; None: the memory the program was linked into (`Program.memory_sizes`, the
    CUDA API's), else the model machine's, which hand-written programs target (their
    traces are the model's)."""

    def __init__(self, prog: Program, grid: int, block: int, memory=None,
                 budget: int = limits.DEFAULT_BLOCK_BUDGET,
                 sizes: limits.MemorySizes | None = None):
        limits.check_launch_shape(grid, block)
        self.prog, self.grid, self.block, self.budget = prog, grid, block, budget
        self.sizes = sizes = sizes or prog.memory_sizes or limits.MODEL_MEMORY
        words = sizes.global_words
        mem = [0] * words if memory is None else [limits.u32(int(v)) for v in memory]
        if len(mem) > words:
            raise LaunchError(f"{len(mem)} words of global memory given; the machine has "
                              f"{words}")
        self.memory = mem + [0] * (words - len(mem))
        # a CTA's shared memory is made when it starts: only the launch's own words
        # (the static __shared__ data and the extern array) where the program says them
        shared = sizes.shared_words if prog.shared_words is None else \
            min(prog.shared_words, sizes.shared_words)
        self._shared_size = shared
        self.shared: list[list[int]] = []
        self.per_cta = limits.warps_per_cta(block)
        self.warps: list[Warp] = []       # the running CTA's warps
        self.events: list[BlockEvent] = []
        self.instructions = 0
        self._position = 0        # instruction position of the operation being run
        # barrier releases per CTA: every running lane has passed exactly this many
        # barriers (the protocol's EXEC carries it mod 4; docs/protocol.md)
        self.releases = [0] * grid
        self.group_releases: dict[tuple[int, int], int] = {}   # (cta, group): bar.group
        self.bounds = Bounds(prog.arrays) if prog.arrays else None  # per-array checks
        self.races = SharedRaces() if prog.cuda else None  # CUDA's order between warps
        # local memory, per thread, allocated on first store: (warp, lane) -> {word: value};
        # a word never stored reads 0
        self.local: dict[tuple[int, int], dict[int, int]] = {}
        self._pc = 0

    # -- scheduling -------------------------------------------------------------------
    def run(self) -> InterpRun:
        for cta in range(self.grid):
            self._start_cta(cta)
            self._run_cta(cta)
        return InterpRun(self.memory, self.shared, self.events, self.instructions)

    def _start_cta(self, cta: int) -> None:
        self.shared.append([0] * self._shared_size)
        self.local.clear()      # the threads of the CTA before have ended: their words die
        if self.bounds:
            self.bounds.local.clear()
        self.warps = [Warp(cta * self.per_cta + w, cta, w, w * limits.LANES, self.block)
                      for w in range(self.per_cta)]

    def _run_cta(self, cta: int) -> None:
        first = 0    # warps below it have no running lane until the next release
        while True:
            while first < len(self.warps) and not self.warps[first].running():
                first += 1
            if first == len(self.warps):
                return
            warp = self.warps[first]
            if len(self.events) >= self.budget:
                raise budget_error(self.budget)
            pc = min(warp.pc[lane] for lane in warp.running())
            active = tuple(lane for lane in warp.running() if warp.pc[lane] == pc)
            try:
                event = self.execute(warp, pc, active)
            except _MemoryTrap as mt:
                trap = Trap(mt.kind, mt.address, warp.index, mt.lane, pc, mt.position,
                            warp.cta, mt.op, mt.detail)
                self.events.append(BlockEvent(warp.index, pc, active, [], [], None,
                                              self.releases[warp.cta], trap))
                raise Fault(trap, self.events, self.sizes) from None
            event.epoch = self.releases[cta]
            self.events.append(event)
            if not warp.running() and self._release_barrier(cta, event, first):
                first = 0

    def _release_barrier(self, cta: int, last: BlockEvent, first: int) -> bool:
        """Release the barrier of the last warp's group (bar.group) or of the CTA when
        none of their lanes runs; True if it did. Warps below `first` have no running
        lane (the scheduler passed them)."""
        per_group = GROUP_THREADS // limits.LANES
        start = (last.warp - self.warps[0].index) // per_group * per_group
        if self._release_group(cta, self.warps[start:start + per_group], last):
            return True
        if any(w.status[lane] == RUNNING for w in self.warps[first:]
               for lane in range(limits.LANES)):
            return False
        waiting = [(w, lane) for w in self.warps for lane in range(limits.LANES)
                   if w.status[lane] == WAITING]
        targets = {w.pc[lane] for w, lane in waiting}
        if len(targets) > 1:
            last.trap = Trap("barrier", min(targets) | max(targets) << 16, last.warp, 0,
                             last.block, 0, cta)
            raise Fault(last.trap, self.events, self.sizes)
        for w, lane in waiting:
            w.status[lane] = RUNNING
        if waiting:
            self.releases[cta] += 1
        return bool(waiting)

    def _release_group(self, cta: int, warps: list[Warp], last: BlockEvent) -> bool:
        """bar.group: release the group's lanes when none runs and one waits there."""
        lanes = [(w, lane) for w in warps for lane in range(limits.LANES)]
        if any(w.status[lane] == RUNNING for w, lane in lanes):
            return False
        waiting = [(w, lane) for w, lane in lanes if w.status[lane] == WAITING]
        if not any(w.scope[lane] == "group" for w, lane in waiting):
            return False
        targets = {w.pc[lane] for w, lane in waiting}
        if len(targets) > 1 or any(w.scope[lane] != "group" for w, lane in waiting):
            last.trap = Trap("barrier", min(targets) | max(targets) << 16, last.warp, 0,
                             last.block, 0, cta)
            raise Fault(last.trap, self.events, self.sizes)
        for w, lane in waiting:
            w.status[lane] = RUNNING
        group = warps[0].group
        self.group_releases[cta, group] = self.group_releases.get((cta, group), 0) + 1
        return True

    # -- one block ----------------------------------------------------------------------
    def execute(self, warp: Warp, pc: int, active: tuple[int, ...]) -> BlockEvent:
        blk = self.prog.blocks[pc]
        saved = [list(warp.regs[lane]) for lane in range(limits.LANES)]
        bounds, self._pc = self.bounds, pc
        saved_tags = bounds.snapshot(warp.index, active) if bounds else None
        mem_writes: list[tuple[int, int]] = []
        for s, stage in enumerate(blk.stages):
            results: list[tuple[int, int, int]] = []   # (lane, reg, value)
            tags = []
            for k, ins in enumerate(stage):
                self.instructions += 1
                self._position = s * limits.SLOTS + k
                out = self._op(warp, ins, active, mem_writes)
                for lane, value in out.items():
                    results.append((lane, ins.dst, value))
                    if bounds:
                        tags.append((lane, ins.dst, bounds.result_tag(
                            warp.index, lane, (pc, s, k), ins, warp.regs[lane])))
            for lane, reg, value in results:
                warp.regs[lane][reg] = value
            for lane, reg, tag in tags:
                bounds.set(warp.index, lane, reg, tag)
        writeback = []
        for reg in sorted(blk.writeback):
            writeback.append((reg, {lane: warp.regs[lane][reg] for lane in active}))
        term = blk.terminator
        taken = None
        if isinstance(term, Br):
            taken = tuple(lane for lane in active if warp.regs[lane][term.cond.n] != 0)
        for lane in active:
            if isinstance(term, Jmp):
                warp.pc[lane] = term.target
            elif isinstance(term, Br):
                warp.pc[lane] = term.taken if lane in taken else term.not_taken
            elif isinstance(term, Bar):
                warp.pc[lane] = term.target
                warp.status[lane] = WAITING
                warp.scope[lane] = term.scope
            elif isinstance(term, Exit):
                warp.status[lane] = EXITED
        # block-local temporaries: only the writeback registers keep their new values
        for lane in active:
            regs = saved[lane]
            for reg in blk.writeback:
                regs[reg] = warp.regs[lane][reg]
            warp.regs[lane] = regs
        if bounds:
            bounds.restore(warp.index, active, saved_tags, blk.writeback)
        return BlockEvent(warp.index, pc, active, writeback, mem_writes, taken)

    def _value(self, warp: Warp, lane: int, o) -> int:
        if isinstance(o, Imm):
            return o.value
        return 0 if o.n == limits.ZERO_REG else warp.regs[lane][o.n]

    def _special(self, warp: Warp, lane: int, name: str) -> int:
        return {"tid": warp.tid[lane], "ntid": self.block, "ctaid": warp.cta,
                "nctaid": self.grid, "laneid": lane, "warpid": warp.warp_in_cta}[name]

    def _word(self, ins: Instr, space: str, address: int, lane: int) -> int:
        addr = limits.u32(address + ins.offset)
        words = limits.LOCAL_WORDS if space == "local" else self.sizes.words(space)
        if addr % 4 or addr // 4 >= words:
            raise _MemoryTrap(memory_kind(space, addr % 4 != 0), addr, lane, self._position,
                              ins.op)
        launch = self.prog.shared_words
        if space == "shared" and launch is not None and addr // 4 >= launch:
            raise _MemoryTrap(memory_kind(space, False), addr, lane, self._position, ins.op,
                              f"the launch has {launch} word{'s' * (launch != 1)} of shared "
                              f"memory per CTA (its __shared__ data and the extern array's "
                              f"launch size, --shared-bytes / shared_mem=)")
        return addr // 4

    def _mem(self, space: str, cta: int) -> list[int]:
        return self.memory if space == "global" else self.shared[cta]

    def _op(self, warp: Warp, ins: Instr, active, mem_writes) -> dict[int, int]:
        spec = ins.spec
        vals = {lane: [self._value(warp, lane, o) for o in ins.srcs] for lane in active}
        if spec.kind == "alu":
            return {lane: spec.fn(*vals[lane]) for lane in active}
        if spec.kind == "sreg":
            return {lane: self._special(warp, lane, spec.mode) for lane in active}
        if spec.kind == "vote":
            mask = sum(1 << lane for lane in active if vals[lane][0] != 0)
            return {lane: mask for lane in active}
        if spec.kind == "shfl":
            return {lane: self._shfl(warp, ins, lane, active, *vals[lane]) for lane in active}
        if spec.space == "local":
            return self._local_op(warp, ins, active, vals)
        mem = self._mem(spec.space, warp.cta)
        out: dict[int, int] = {}
        touched: dict[int, None] = {}
        s, k = divmod(self._position, limits.SLOTS)
        access = self.prog.accesses.get((self._pc, s, k))
        for lane in active:
            word = self._word(ins, spec.space, vals[lane][0], lane)
            bad = misaligned(access, limits.u32(vals[lane][0] + ins.offset))
            if bad:
                raise _MemoryTrap(memory_kind(spec.space, True), bad[0], lane,
                                  self._position, ins.op, bad[1])
            if self.bounds and spec.space == "global":
                exact = self.bounds.exact(warp.index, lane, (self._pc, s, k), ins)
                narrow = (exact, access[0]) if exact is not None and access \
                    and access[0] < 4 else None
                detail = self.bounds.outside(warp.index, lane, (self._pc, s, k), ins, word,
                                             narrow)
                if detail:
                    raise _MemoryTrap(memory_kind("global", False), exact if narrow else
                                      limits.u32(vals[lane][0] + ins.offset), lane,
                                      self._position, ins.op, detail)
            if spec.kind == "load":
                out[lane] = mem[word]
                self._shared_access(warp, spec.space, word, READ, mem[word])
                continue
            if spec.kind == "store":
                mem[word] = vals[lane][1]
                self._shared_access(warp, spec.space, word, WRITE, mem[word])
            else:
                out[lane] = old = mem[word]
                mem[word] = ATOMIC_FNS[spec.mode][0](old, *vals[lane][1:])
                self._shared_access(warp, spec.space, word, ATOMIC, mem[word])
            touched[word] = None
        for word in touched:
            mem_writes.append((MemoryWord(spec.space, warp.cta, word), mem[word]))
        return out

    def _local_op(self, warp: Warp, ins: Instr, active, vals) -> dict[int, int]:
        """ld.local / st.local: each lane's own words (no memory record, no race)."""
        out: dict[int, int] = {}
        at = (self._pc, *divmod(self._position, limits.SLOTS))
        for lane in active:
            word = self._word(ins, "local", vals[lane][0], lane)
            if ins.spec.kind == "load":
                out[lane] = self.local.get((warp.index, lane), {}).get(word, 0)
                if self.bounds:
                    self.bounds.load_local(warp.index, lane, word)
            else:
                self.local.setdefault((warp.index, lane), {})[word] = vals[lane][1]
                if self.bounds:
                    self.bounds.store_local(warp.index, lane, at, ins, word)
        return out

    def _shared_access(self, warp: Warp, space: str, word: int, kind: str, value: int):
        if self.races is not None and space == "shared":
            self.races.access(warp.cta, self.releases[warp.cta], word, warp.index, kind,
                              self._pc, value, warp.group,
                              self.group_releases.get((warp.cta, warp.group), 0))

    def _shfl(self, warp: Warp, ins: Instr, lane: int, active, a: int, b: int,
              c: int) -> int:
        # PTX ISA, shfl.sync: c packs the clamp value (bits 0-4) and segment mask (8-12).
        # A source lane outside the 4-lane warp gives the lane's own value, as PTX does
        # for a source outside the segment. So does an inactive source lane: PTX leaves
        # that case undefined, and the ISA defines it as the lane's own value (the
        # model machine never reads an inactive lane's operand).
        mode = ins.spec.mode
        bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
        max_lane = (lane & segmask) | (cval & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~segmask)
            ok = j <= max_lane
        if not ok or not 0 <= j < limits.LANES or j not in active:
            return a
        return self._value(warp, j, ins.srcs[0])


def run_launch(prog: Program, grid: int = 1, block: int = limits.LANES, memory=None,
               budget: int = limits.DEFAULT_BLOCK_BUDGET,
               sizes: limits.MemorySizes | None = None) -> InterpRun:
    """Run one launch of `prog` to the end on the reference interpreter."""
    return Machine(prog, grid, block, memory, budget, sizes).run()
