"""Device check (not a pytest test): PTX div/rem on a real NVIDIA GPU, through the CUDA
driver API (ctypes, no toolkit needed), for the dividend/divisor pairs that matter:
zero divisors, INT_MIN / -1, signs. Writes $OUT/divrem_gpu.json; tests/cuda/test_divide.py
holds the values it reported and checks qgpu's expansion against them.

    python3 tests/cuda/device_divrem.py        # on a machine with an NVIDIA GPU
"""

import ctypes
import json
import os
import struct

PTX = """
.version 7.0
.target sm_75
.address_size 64

.visible .entry divs(
    .param .u64 divs_param_0,
    .param .u64 divs_param_1,
    .param .u64 divs_param_2,
    .param .u64 divs_param_3,
    .param .u64 divs_param_4,
    .param .u64 divs_param_5,
    .param .u32 divs_param_6
)
{
    .reg .pred     %p<2>;
    .reg .b32     %r<18>;
    .reg .b64     %rd<20>;

    ld.param.u32     %r2, [divs_param_6];
    mov.u32     %r3, %ctaid.x;
    mov.u32     %r4, %ntid.x;
    mov.u32     %r5, %tid.x;
    mad.lo.s32     %r1, %r3, %r4, %r5;
    setp.ge.s32     %p1, %r1, %r2;
    @%p1 bra     $L__BB0_2;
    ld.param.u64     %rd7, [divs_param_0];
    ld.param.u64     %rd8, [divs_param_5];
    cvta.to.global.u64     %rd1, %rd8;
    ld.param.u64     %rd9, [divs_param_1];
    ld.param.u64     %rd10, [divs_param_4];
    cvta.to.global.u64     %rd2, %rd10;
    ld.param.u64     %rd11, [divs_param_2];
    ld.param.u64     %rd12, [divs_param_3];
    cvta.to.global.u64     %rd3, %rd12;
    cvta.to.global.u64     %rd4, %rd11;
    cvta.to.global.u64     %rd5, %rd9;
    cvta.to.global.u64     %rd6, %rd7;
    mul.wide.s32     %rd13, %r1, 4;
    add.s64     %rd14, %rd6, %rd13;
    ld.global.u32     %r6, [%rd14];
    add.s64     %rd15, %rd5, %rd13;
    ld.global.u32     %r7, [%rd15];
    div.s32     %r8, %r6, %r7;
    add.s64     %rd16, %rd4, %rd13;
    st.global.u32     [%rd16], %r8;
    ld.global.u32     %r9, [%rd14];
    ld.global.u32     %r10, [%rd15];
    rem.s32     %r11, %r9, %r10;
    add.s64     %rd17, %rd3, %rd13;
    st.global.u32     [%rd17], %r11;
    ld.global.u32     %r12, [%rd14];
    ld.global.u32     %r13, [%rd15];
    div.u32     %r14, %r12, %r13;
    add.s64     %rd18, %rd2, %rd13;
    st.global.u32     [%rd18], %r14;
    ld.global.u32     %r15, [%rd14];
    ld.global.u32     %r16, [%rd15];
    rem.u32     %r17, %r15, %r16;
    add.s64     %rd19, %rd1, %rd13;
    st.global.u32     [%rd19], %r17;
$L__BB0_2:
    ret;
}
"""

A = [0, 1, -1, 7, -7, 100, -2147483648, 2147483647, 12345, -99999]
B = [0, 1, -1, 3, -3, 7, -2147483648, 2147483647, 2, -2]


def main():
    cu = ctypes.CDLL("libcuda.so.1")

    def ck(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed: CUDA error {rc}")

    ck(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    ck(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), PTX.encode() + b"\0"), "cuModuleLoadData")
    fn = ctypes.c_void_p()
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"divs"), "cuModuleGetFunction")
    pairs = [(a, b) for a in A for b in B]
    n = len(pairs)
    bufs = []
    host_a = struct.pack(f"{n}i", *[a for a, _ in pairs])
    host_b = struct.pack(f"{n}i", *[b for _, b in pairs])
    for _ in range(6):
        p = ctypes.c_uint64()
        ck(cu.cuMemAlloc_v2(ctypes.byref(p), 4 * n), "cuMemAlloc")
        bufs.append(p)
    ck(cu.cuMemcpyHtoD_v2(bufs[0], host_a, 4 * n), "HtoD")
    ck(cu.cuMemcpyHtoD_v2(bufs[1], host_b, 4 * n), "HtoD")
    nn = ctypes.c_int(n)
    args = (ctypes.c_void_p * 7)(*[ctypes.cast(ctypes.byref(b), ctypes.c_void_p) for b in bufs],
                                 ctypes.cast(ctypes.byref(nn), ctypes.c_void_p))
    ck(cu.cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, None, args, None), "cuLaunchKernel")
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    out = {}
    for k, name in enumerate(["q", "r", "uq", "ur"]):
        host = ctypes.create_string_buffer(4 * n)
        ck(cu.cuMemcpyDtoH_v2(host, bufs[2 + k], 4 * n), "DtoH")
        out[name] = list(struct.unpack(f"{n}I", host.raw))
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    result = {"device": name.value.decode(), "pairs": pairs, **out}
    dest = os.path.join(os.environ.get("OUT", "."), "divrem_gpu.json")
    with open(dest, "w") as f:
        json.dump(result, f)
    print(result["device"], "ok", n, "pairs")


if __name__ == "__main__":
    main()
