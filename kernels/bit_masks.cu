// Mask tricks: lowest set bit, clear lowest set bit, power-of-two test, next power of two
// (for x <= 2^31), low-bit masks, bit-field extract and insert with constant positions.
__global__ void bit_masks(const unsigned* in, unsigned* out) {
  int i = threadIdx.x;
  unsigned x = in[i];
  unsigned p = x - 1;
  p |= p >> 1; p |= p >> 2; p |= p >> 4; p |= p >> 8; p |= p >> 16;
  out[6 * i + 0] = x & -x;
  out[6 * i + 1] = x & (x - 1);
  out[6 * i + 2] = x != 0 && (x & (x - 1)) == 0;
  out[6 * i + 3] = p + 1;
  out[6 * i + 4] = (x >> 5) & 0x3FFu;                       // bits 5..14
  out[6 * i + 5] = (x & ~(0xFFu << 12)) | ((x & 0xFFu) << 12);  // bits 12..19 = low byte
}
