// Lookup tables in __constant__ and __device__ memory with initialisers: an S-box-like
// substitution of each nibble, and a per-thread weight table in device memory.
__constant__ unsigned sbox[16] = {0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD,
                                  0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2};
__device__ int weight[4] = {3, -1, 4, -5};

__global__ void constant_table(const unsigned* in, unsigned* out, int* weighted) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i], r = 0;
  for (int k = 0; k < 32; k += 4) r |= sbox[(x >> k) & 0xF] << k;
  out[i] = r;
  weighted[i] = (int)(x & 0xFF) * weight[i & 3];
}
