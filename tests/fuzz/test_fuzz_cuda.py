"""A few hundred seeded fuzz cases through the CUDA front end and the reference
interpreter (qgpu/fuzz/cuda_kernels.py): every output equals the C-semantics evaluation."""

import pytest

from qgpu.fuzz.cuda_kernels import fuzz

CASES_PER_CHUNK = 50


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(6))
def test_fuzz_cases_match_c_semantics(chunk):
    results = fuzz(CASES_PER_CHUNK, seed=1000 + chunk)
    bad = [r for r in results if r.status not in ("ok", "over_limits")]
    # a clear "too big for the machine" refusal is allowed, but only rarely
    assert sum(r.status == "over_limits" for r in results) <= CASES_PER_CHUNK // 20
    assert not bad, "\n".join(f"seed {r.seed}: {r.status}: {r.detail}\n{r.program.source()}"
                              for r in bad[:3])
