"""One-warp assembly programs for barriers, shared memory and global atomics on the model
machine (tests/runtime/test_shared.py, test_atomics.py)."""

BAR_DIVERGENT = """
block 0:
  tid r1
  setlt.u r2, r1, 2
  br r2, 1, 3
block 1:
  add r3, r1, 10
  .writeback r3
  bar 2
block 2:
  add r4, r3, r1
  .writeback r4
  exit
block 3:
  add r3, r1, 20
  .writeback r3
  jmp 4
block 4:
  sub r3, r3, 1
  .writeback r3
  bar 2
"""

BAR_AFTER_EXIT = """
block 0:
  tid r1
  seteq r2, r1, 0
  br r2, 3, 1
block 1:
  add r3, r1, 5
  .writeback r3
  bar 2
block 2:
  add r4, r3, r3
  .writeback r4
  bar 4
block 3:
  exit
block 4:
  sub r5, r4, r1
  .writeback r5
  exit
"""

SHARED = """
block 0:
  tid r1
  add r2, r1, r1
  add r2, r2, r2
  st.shared [r2+8], r2
  .writeback r1, r2
  bar 1
block 1:
  ld.shared r4, [r2+12]
  xor r5, r4, 0x80000000
  add r6, r2, 40
  st.shared [r6-20], r5
  .writeback r4, r6
  jmp 2
block 2:
  ld.shared r7, [16]
  ld.shared r8, [r6-24]
  st.shared [124], r1
  st.global [r2+32], r8
  .writeback r7, r8
  jmp 3
block 3:
  ld.shared r9, [124]
  st.global [r2+64], r9
  .writeback r9
  exit
"""

ATOMICS = """
block 0:
  tid r1
  setge.u r5, r1, 2
  add r5, r5, r5
  add r5, r5, r5
  .writeback r1, r5
  jmp 1
block 1:
  add r6, r1, 0xfffffffe
  atom.global.add r7, [r5+8], r6
  add r2, r1, r1
  add r2, r2, r2
  .writeback r2, r6, r7
  jmp 2
block 2:
  atom.global.add r8, [12], 0xffffffff
  add r9, r8, 1
  add r3, r5, 24
  .writeback r3, r8, r9
  jmp 3
block 3:
  atom.global.exch r10, [r3-4], r9
  .writeback r10
  jmp 4
block 4:
  atom.global.or r11, [r2+48], r6
  st.global [r2+64], r11
  .writeback r11
  jmp 5
block 5:
  ld.global r4, [r2+8]
  atom.global.and r12, [r5+28], r4
  .writeback r12
  jmp 6
block 6:
  atom.global.xor r13, [r3+16], r6
  .writeback r13
  jmp 7
block 7:
  atom.global.exch r14, [r2+8], r1
  .writeback r14
  jmp 8
block 8:
  atom.global.add r15, [r5+48], 0x80000001
  .writeback r15
  jmp 9
block 9:
  atom.global.xor r4, [60], r1
  .writeback r4
  exit
"""

# global memory for ATOMICS: edge values at the words the atomics touch
ATOMICS_MEMORY = [0, 0, 0xffffffff, 0x80000000, 0x7fffffff, 0x12345678, 0, 0xdeadbeef,
                  0xfffffffe, 0xffff0000, 0x0000ffff, 0x00000001, 0xf0f0f0f0, 0x0f0f0f0f,
                  0xffffffff, 0xffffffff]

# every lane adds 0xffffffff to one word: carries of 3 into both halves
ADD_CARRIES = """
block 0:
  tid r1
  mov r2, 0xffffffff
  atom.global.add r3, [4], r2
  .writeback r3
  jmp 1
block 1:
  atom.global.add r4, [8], 0xffff
  .writeback r4
  jmp 2
block 2:
  atom.global.add r5, [r1+12], r3
  .writeback r5
  exit
"""
