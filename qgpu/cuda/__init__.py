"""cuda: the host's NVRTC-and-driver role. clang driver and bundled header, PTX parser,
lowering to machine blocks (register allocation, block packing), and the launch API."""
