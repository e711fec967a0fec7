"""Small machine-assembly programs shared by several test modules."""

# Each of the block's lanes adds 100 to its word of global memory, over two blocks
# (a jump between them), so a trace has a load, a register write and a store per lane.
ADD_100 = """
block 0:
  tid r1
  shl r2, r1, 2
  ld.global r3, [r2]
  add r3, r3, 100
  jmp 1
block 1:
  st.global [r2], r3
  exit
"""
