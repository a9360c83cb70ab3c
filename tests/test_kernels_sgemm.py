"""The sgemm call of CPU matmul kernels (kernels/sgemm.py) against numba's np.dot, the
call it replaces: the same bits for every storage layout of A and B, at offsets into
flat buffers, for sizes on both sides of OpenBLAS's small-matrix paths."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from sexpgpu.kernels import sgemm

SIZES = [(2, 3, 2), (5, 7, 3), (12, 64, 65), (64, 32, 64), (768, 128, 384), (33, 200, 17)]


def _np_dot(ta: bool, tb: bool):
    # the text kernels/structured.py generated before: np.dot on reshaped views
    a = "p0[a_at:a_at + m * k].reshape((k, m)).T" if ta else "p0[a_at:a_at + m * k].reshape((m, k))"
    b = "p1[b_at:b_at + k * n].reshape((n, k)).T" if tb else "p1[b_at:b_at + k * n].reshape((k, n))"
    namespace = {"np": np, "numba": numba}
    exec(f"@numba.njit\ndef f(p0, a_at, p1, b_at, p2, o_at, m, k, n):\n"  # noqa: S102
         f"    np.dot({a}, {b}, p2[o_at:o_at + m * n].reshape((m, n)))\n", namespace)
    return namespace["f"]


@pytest.mark.parametrize("layout", ["cc", "cf", "fc", "ff"])
def test_sgemm_gives_np_dots_bits_for_every_layout(layout: str) -> None:
    ta, tb = layout[0] == "f", layout[1] == "f"
    gemm, reference = getattr(sgemm, f"gemm_{layout}"), _np_dot(ta, tb)
    rng = np.random.default_rng(3)
    for m, k, n in SIZES:
        a = rng.standard_normal(m * k + 5).astype(np.float32)
        b = rng.standard_normal(k * n + 3).astype(np.float32)
        want, got = np.full(m * n + 4, np.nan, np.float32), np.full(m * n + 4, np.nan, np.float32)
        reference(a, 5, b, 3, want, 4, m, k, n)
        numba.njit(lambda *args: gemm(*args))(a, 5, b, 3, got, 4, m, k, n)
        assert np.array_equal(got, want, equal_nan=True), (layout, m, k, n)
        assert np.isnan(got[:4]).all()  # nothing written before the output's offset
        # and the product is the matmul (float64 reference, f32 rounding)
        A = a[5:5 + m * k].reshape((k, m)).T if ta else a[5:5 + m * k].reshape((m, k))
        B = b[3:3 + k * n].reshape((n, k)).T if tb else b[3:3 + k * n].reshape((k, n))
        np.testing.assert_allclose(got[4:].reshape(m, n), A.astype(np.float64) @ B,
                                   rtol=1e-4, atol=1e-4 * np.sqrt(k))
