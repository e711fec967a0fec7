"""Small one-warp assembly programs for the model machine's end-to-end tests."""

STRAIGHT = """
block 0:
  tid r1
  add r2, r1, 0x12345
  sub r3, r1, r2
  xor r4, r3, r2
  .writeback r1, r2, r3, r4
  exit
"""

LOGIC_AND_COMPARE = """
block 0:
  tid r1
  sub r2, r1, 2
  and r3, r2, 0xf0f0ff00
  or r4, r2, 0x00ff0ff0
  .writeback r2, r3, r4
  jmp 1
block 1:
  setlt.s r5, r2, 0
  setlt.u r6, r2, 0
  seteq r7, r2, 0xffffffff
  setge.s r8, r2, r1
  .writeback r5, r6, r7, r8
  jmp 2
block 2:
  setne r9, r2, r1
  setle.u r10, r1, 2
  setgt.s r11, r2, 0
  setle.s r12, r2, r1
  .writeback r9, r10, r11, r12
  jmp 3
block 3:
  setgt.u r13, r2, 3
  setge.u r14, r1, r2
  selp r15, r3, r4, r5
  .writeback r13, r14, r15
  exit
"""

SPECIAL = """
block 0:
  ntid r1
  nctaid r2
  laneid r3
  warpid r4
  .writeback r1, r2, r3, r4
  jmp 1
block 1:
  ctaid r5
  tid r6
  or r7, r6, r5
  .writeback r5, r6, r7
  exit
"""

DIVERGENT = """
block 0:
  tid r1
  setlt.u r2, r1, 2
  br r2, 1, 2
block 1:
  add r3, r1, 100
  jmp 3
block 2:
  sub r3, r1, 100
  jmp 3
block 3:
  xor r4, r3, r1
  .writeback r4
  exit
"""

LOOP = """
block 0:
  tid r1
  mov r2, 0
  mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2
  add r2, r2, 1
  setle.u r4, r2, r1
  br r4, 1, 2
block 2:
  mov r5, r3
  exit
"""

EARLY_EXIT = """
block 0:
  tid r1
  seteq r2, r1, 1
  br r2, 2, 1
block 1:
  add r3, r1, 1
  exit
block 2:
  exit
"""

BITS = """
block 0:
  tid r1
  add r2, r1, 0x00f00000
  popc r3, r2
  clz r4, r2
  .writeback r2, r3, r4
  jmp 1
block 1:
  brev r5, r2
  clz r6, r0
  popc r7, 0xffffffff
  .writeback r5, r6, r7
  exit
"""

PROGRAMS = {"straight": STRAIGHT, "logic_and_compare": LOGIC_AND_COMPARE,
            "special": SPECIAL, "divergent": DIVERGENT, "loop": LOOP,
            "early_exit": EARLY_EXIT, "bits": BITS}

MEMORY = """
block 0:
  tid r1
  add r2, r1, r1
  add r2, r2, r2
  ld.global r3, [r2+4]
  .writeback r2, r3
  jmp 1
block 1:
  add r4, r3, 1
  st.global [r2+64], r4
  exit
"""

SAME_WORD = """
block 0:
  tid r1
  add r2, r1, 10
  st.global [r0+8], r2
  st.global [r0+12], r1
  exit
"""

NEGATIVE_OFFSET = """
block 0:
  tid r1
  add r2, r1, 1
  add r2, r2, r2
  add r2, r2, r2
  .writeback r2
  jmp 1
block 1:
  ld.global r3, [r2-4]
  st.global [r0+200], r3
  exit
"""

MEMORY_PROGRAMS = {"memory": MEMORY, "same_word": SAME_WORD,
                   "negative_offset": NEGATIVE_OFFSET}
