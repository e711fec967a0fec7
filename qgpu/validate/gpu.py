"""validate.gpu: the real-GPU side. Compiles a suite kernel with NVRTC through CuPy, with a
prelude that gives qgpu's integer types, launches it with the reference case's inputs and
reads every pointer argument back.

Meaning on the GPU: warpSize is 32 there and on qgpu (whose front end lowers CUDA's
32-lane warp operations over 8 machine warps, qgpu/cuda/warp.py); suite kernels launch
CTAs of at most 16 threads, one partial warp, and mask their warp operations to the
threads that exist (see kernels/), so they mean the same on both.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np

from qgpu.suite import ARRAY_DTYPES, Param

# NVRTC has no <stdint.h> by default; repeating a typedef of the same type is legal C++.
GPU_PRELUDE = ("typedef int int32_t;\ntypedef unsigned int uint32_t;\n"
               "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\n"
               "typedef short int16_t;\ntypedef unsigned short uint16_t;\n")

NVRTC_OPTIONS = ("-std=c++17",)


def gpu_source(source: str) -> str:
    """The kernel source as NVRTC compiles it: the prelude, then the source unchanged."""
    return GPU_PRELUDE + "#line 1\n" + source


def extern_c_source(source: str, entry: str) -> str:
    """The source with the entry point declared extern "C" (an unmangled symbol), the
    fallback when NVRTC name expressions are unavailable."""
    pattern = r"__global__(\s+void\s+" + re.escape(entry) + r"\s*\()"
    changed, count = re.subn(pattern, r'extern "C" __global__\1', source, count=1)
    if count != 1:
        raise ValueError(f"no `__global__ void {entry}(` in the source")
    return changed


def host_arguments(params: list[Param], args: dict) -> list:
    """The launch arguments in signature order, typed for a raw CUDA launch: arrays as
    fresh copies in their dtype (one of the suite's ARRAY_DTYPES), scalars as numpy
    scalars of the parameter's width (np.int32, np.uint32, np.float32, np.int16, ...: a
    Python int or float would be passed as 64 bits)."""
    values = []
    for p in params:
        value = args[p.name]
        if p.pointer:
            array = np.asarray(value)
            if array.dtype not in ARRAY_DTYPES:
                raise TypeError(f"{p.name}: an array of "
                                f"{'/'.join(d.name for d in ARRAY_DTYPES)} expected, got "
                                f"{array.dtype}")
            values.append(array.copy())
        elif p.dtype == "float32" or isinstance(value, float | np.floating):
            values.append(np.float32(value))
        elif p.dtype in ("bool", "int8", "uint8", "int16", "uint16"):
            # a char/short/bool parameter is 1 or 2 bytes in the kernel's parameter block
            dtype = np.dtype(p.dtype)
            bits = 8 * dtype.itemsize
            raw = np.array(int(value) & ((1 << bits) - 1), f"uint{bits}")
            values.append(raw.astype(bool)[()] if dtype.kind == "b" else raw.view(dtype)[()])
        elif p.unsigned:
            values.append(np.uint32(int(value) & 0xFFFFFFFF))
        else:
            values.append(np.array(int(value) & 0xFFFFFFFF, np.uint32).view(np.int32)[()])
    return values


def _nvidia_smi() -> dict:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=30,
            check=True).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    fields = [f.strip() for f in out[0].split(",")]
    return dict(zip(["smi_name", "driver", "memory"], fields, strict=False))


class CupyBackend:
    """Runs kernels on GPU 0 with CuPy's RawModule (NVRTC)."""

    def __init__(self):
        import cupy

        self.cupy = cupy
        self._modules: dict[str, tuple[object, str]] = {}

    def device_info(self) -> dict:
        cp = self.cupy
        runtime = cp.cuda.runtime
        props = runtime.getDeviceProperties(0)
        name = props["name"]
        info = {"gpu": name.decode() if isinstance(name, bytes) else str(name),
                "compute_capability": f"{props['major']}.{props['minor']}",
                "cuda_driver_api": _version(runtime.driverGetVersion()),
                "cuda_runtime": _version(runtime.runtimeGetVersion()),
                "cupy": cp.__version__}
        try:
            info["nvrtc"] = ".".join(str(v) for v in cp.cuda.nvrtc.getVersion())
        except Exception:  # noqa: BLE001 - optional detail
            pass
        info.update(_nvidia_smi())
        return info

    def function(self, kernel: dict):
        """The compiled entry point (cached per kernel) and how it was found."""
        key = kernel["source"]
        if key not in self._modules:
            entry = kernel["entry"]
            try:
                module = self.cupy.RawModule(code=gpu_source(kernel["source"]),
                                             options=NVRTC_OPTIONS, name_expressions=[entry])
                fn, how = module.get_function(entry), "name_expressions"
            except Exception:  # noqa: BLE001 - fall back to an unmangled symbol
                module = self.cupy.RawModule(
                    code=gpu_source(extern_c_source(kernel["source"], entry)),
                    options=NVRTC_OPTIONS)
                fn, how = module.get_function(entry), "extern_c"
            self._modules[key] = (fn, how)
        return self._modules[key]

    def run(self, kernel: dict, params: list[Param], case: dict, args: dict) -> dict:
        cp = self.cupy
        fn, _how = self.function(kernel)
        host = host_arguments(params, args)
        device = [cp.asarray(v) if isinstance(v, np.ndarray) and v.ndim == 1 else v
                  for v in host]
        fn((case["grid"],), (case["block"],), tuple(device))
        cp.cuda.Device(0).synchronize()
        return {p.name: cp.asnumpy(d) for p, d in zip(params, device, strict=True)
                if p.pointer}


def _version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"
