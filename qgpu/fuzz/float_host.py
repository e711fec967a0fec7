"""fuzz.float_host: the float fuzzer's oracle: fuzz.float_lang's programs built natively for
this CPU by clang++-19 (x86-64 SSE arithmetic, IEEE binary32 with subnormals, no
contraction: -ffp-contract=off, so every fma is one that float_lang.host_expr wrote where
clang contracts on the device), with helpers that give PTX's answers where C's differ or
are left open: the canonical NaN 0x7fffffff for every arithmetic NaN, min/max's NaN and
signed-zero rules, saturating float-to-int conversions with NaN -> 0. Many programs are
built into one executable (one clang++ run per batch). The undefined-behaviour sanitizer
traps, so a program that C leaves undefined cannot pass silently.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from qgpu.errors import QgpuError
from qgpu.fuzz.float_lang import N_FLOATS, Program, int_literal

_HOST_PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
static int g_nanbits;   // set when __float_as_int saw a NaN (its payload is not knowable)
static float q_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t q_u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float q_c(float x) { return std::isnan(x) ? q_bits(0x7fffffffu) : x; }  // GPU NaN
static float q_add(float a, float b) { return q_c(a + b); }
static float q_sub(float a, float b) { return q_c(a - b); }
static float q_mul(float a, float b) { return q_c(a * b); }
static float q_div(float a, float b) { return q_c(a / b); }
static float q_fma(float a, float b, float c) { return q_c(std::fma(a, b, c)); }
static float q_sqrt(float a) { return q_c(std::sqrt(a)); }
static float q_neg(float a) { return q_bits(q_u(a) ^ 0x80000000u); }
static float q_abs(float a) { return q_bits(q_u(a) & 0x7fffffffu); }
// PTX min/max: the other operand when one is NaN, -0 below +0
static float q_min(float a, float b) {
  if (std::isnan(a)) return std::isnan(b) ? q_bits(0x7fffffffu) : b;
  if (std::isnan(b)) return a;
  if (a == b) return q_bits(q_u(a) | q_u(b));
  return a < b ? a : b;
}
static float q_max(float a, float b) {
  if (std::isnan(a)) return std::isnan(b) ? q_bits(0x7fffffffu) : b;
  if (std::isnan(b)) return a;
  if (a == b) return q_bits(q_u(a) & q_u(b));
  return a > b ? a : b;
}
static float q_rint(float a) { return q_c(std::nearbyint(a)); }
static float q_trunc(float a) { return q_c(std::trunc(a)); }
static float q_floor(float a) { return q_c(std::floor(a)); }
static float q_ceil(float a) { return q_c(std::ceil(a)); }
static float q_asfloat(int i) { return q_bits((uint32_t)i); }
static int q_asint(float x) { if (std::isnan(x)) g_nanbits = 1; return (int)q_u(x); }
static int q_toint(float x) { return (x > -2147483904.0f && x < 2147483648.0f) ? (int)x : 0; }
// PTX cvt.r*i.s32.f32 / u32: NaN -> 0, saturating
static int q_sat(float r) {
  if (std::isnan(r)) return 0;
  if (r >= 2147483648.0f) return 2147483647;
  if (r < -2147483648.0f) return -2147483647 - 1;
  return (int)r;
}
static int q_f2i_rn(float x) { return q_sat(std::nearbyint(x)); }
static int q_f2i_rz(float x) { return q_sat(std::trunc(x)); }
static int q_f2i_rd(float x) { return q_sat(std::floor(x)); }
static int q_f2i_ru(float x) { return q_sat(std::ceil(x)); }
static unsigned q_f2u_rz(float x) {
  if (std::isnan(x)) return 0;
  float r = std::trunc(x);
  if (r >= 4294967296.0f) return 4294967295u;
  if (r <= 0.0f) return 0;
  return (unsigned)r;
}
"""


def host_source(cases: list[tuple[Program, list]]) -> str:
    """One C++ program running every (program, per-thread inputs) case and printing, per
    thread, its float output bits, its int outputs and the NaN-bits flag."""
    parts = [_HOST_PRELUDE]
    main = ["int main() {"]
    for index, (program, inputs) in enumerate(cases):
        parts.append(program.host_function(index))
        fl = ", ".join(f"{v & 0xFFFFFFFF}u" for fs, _ in inputs for v in fs)
        nn = ", ".join(int_literal(v) for _, ns in inputs for v in ns)
        nf, ni = len(program.float_outputs), len(program.int_outputs)
        main += [
            "  {", f"    static const uint32_t fb[] = {{{fl}}};",
            f"    static const int n[] = {{{nn}}};",
            f"    float f[{len(inputs) * N_FLOATS}];",
            "    memcpy(f, fb, sizeof f);",
            f"    static float fo[{len(inputs) * nf + 1}]; static int io[{len(inputs) * ni + 1}];",
            f"    for (int t = 0; t < {len(inputs)}; ++t) {{",
            f"      g_nanbits = 0; prog{index}(f, n, fo, io, t);",
            f"      for (int k = 0; k < {nf}; ++k) printf(\"%u \", q_u(fo[{nf} * t + k]));",
            f"      for (int k = 0; k < {ni}; ++k) printf(\"%d \", io[{ni} * t + k]);",
            "      printf(\"%d\\n\", g_nanbits);", "    }", "  }"]
    main += ["  return 0;", "}"]
    return "\n".join(parts + main) + "\n"


HOST_FLAGS = ["-O1", "-w", "-ffp-contract=off", "-fno-fast-math", "-march=x86-64",
              "-fsanitize=undefined", "-fno-sanitize-recover=all",
              "-fno-sanitize=float-divide-by-zero"]


def run_host(cases: list[tuple[Program, list]], clang: str = "clang++-19") -> list[list]:
    """Per case, per thread: (float output bits, int outputs, nan_bits flag), computed by
    the native build of the host source (undefined behaviour traps: the sanitizer)."""
    if shutil.which(clang) is None:
        raise QgpuError(f"{clang} is not installed: the float fuzzer's oracle is the native "
                        "build of its programs (apt-get install clang-19)")
    with tempfile.TemporaryDirectory(prefix="qgpu-ffuzz-") as tmp:
        src, exe = Path(tmp) / "oracle.cpp", Path(tmp) / "oracle"
        src.write_text(host_source(cases))
        build = subprocess.run([clang, *HOST_FLAGS, str(src), "-o", str(exe)],
                               capture_output=True, text=True)
        if build.returncode:
            raise RuntimeError("host compile failed: " + build.stderr[:2000])
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        if run.returncode:
            raise RuntimeError("host run failed (undefined behaviour?): " + run.stderr[:2000])
    lines = iter(run.stdout.splitlines())
    out = []
    for program, inputs in cases:
        nf = len(program.float_outputs)
        rows = []
        for _ in inputs:
            words = [int(w) for w in next(lines).split()]
            rows.append((words[:nf], words[nf:-1], bool(words[-1])))
        out.append(rows)
    return out
