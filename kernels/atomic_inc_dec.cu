// atomicInc and atomicDec (wrapping counters): each thread increments a counter that wraps
// past `limit` and decrements one that wraps below 0 to `limit`. The final values do not
// depend on the order: n wrapping steps from the start value.
__global__ void atomic_inc_dec(unsigned* inc, unsigned* dec, unsigned limit) {
  atomicInc(inc, limit);
  atomicDec(dec, limit);
}
