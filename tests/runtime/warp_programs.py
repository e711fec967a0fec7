"""Assembly programs with several warps and CTAs for the model machine
(tests/runtime/test_warps.py): special registers per warp and CTA, barriers across warps
(in a loop, so that the barrier epoch wraps), shared memory per CTA, warps that exit while
others wait."""

IDS = """
block 0:
  tid r1
  ctaid r2
  ntid r3
  mul r4, r2, r3
  jmp 1
block 1:
  warpid r5
  shl r5, r5, 8
  laneid r6
  shl r6, r6, 12
  jmp 2
block 2:
  or r7, r1, r5
  or r7, r7, r6
  ctaid r8
  shl r8, r8, 16
  jmp 3
block 3:
  or r7, r7, r8
  add r4, r4, r1
  shl r9, r4, 2
  st.global [r9], r7
  jmp 4
block 4:
  nctaid r10
  shl r10, r10, 24
  or r10, r10, r7
  st.global [r9+256], r10
  exit
"""

# Each round: read the neighbour's shared word, barrier, add it to the own word, barrier;
# six rounds (twelve barriers: the epoch wraps three times), then every CTA writes its
# words to global memory at 16 * ctaid + tid.
BARRIER_LOOP = """
block 0:
  tid r1
  shl r2, r1, 2
  add r12, r1, 1
  st.shared [r2], r12
  bar 1
block 1:
  add r3, r1, 1
  ntid r4
  setlt.u r5, r3, r4
  selp r3, r3, 0, r5
  jmp 2
block 2:
  shl r3, r3, 2
  ld.shared r6, [r3]
  ld.shared r7, [r2]
  add r7, r7, r6
  bar 3
block 3:
  st.shared [r2], r7
  add r10, r10, 1
  setlt.u r11, r10, 6
  bar 4
block 4:
  br r11, 1, 5
block 5:
  ctaid r8
  shl r8, r8, 4
  add r8, r8, r1
  shl r8, r8, 2
  jmp 6
block 6:
  st.global [r8], r7
  exit
"""

# Threads with an odd tid exit at once; the others wait at a barrier that their exits
# release (warps exit while other warps of the CTA wait), then read a word another
# warp wrote to shared memory.
EXIT_RELEASES = """
block 0:
  tid r1
  and r2, r1, 1
  shl r3, r1, 2
  br r2, 4, 1
block 1:
  mul r4, r1, r1
  st.shared [r3], r4
  bar 2
block 2:
  ntid r5
  sub r5, r5, 2
  sub r5, r5, r1
  max.s r5, r5, 0
  jmp 3
block 3:
  and r5, r5, -2
  shl r5, r5, 2
  ld.shared r6, [r5]
  jmp 5
block 4:
  exit
block 5:
  ctaid r7
  shl r7, r7, 6
  add r7, r7, r3
  st.global [r7], r6
  exit
"""

PROGRAMS = {"ids": IDS, "barrier_loop": BARRIER_LOOP, "exit_releases": EXIT_RELEASES}
# (grid, block): 1..4 warps, 1..4 CTAs, partial warps
LAUNCHES = [(1, 8), (1, 16), (2, 8), (4, 4), (4, 3), (2, 5), (1, 13), (3, 1)]
