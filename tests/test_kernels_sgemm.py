"""The sgemm call of CPU kernels (kernels/sgemm.py) against numba's np.dot, the call it
replaces in matmul kernels: the same bits for every storage layout of A and B, at
offsets into flat buffers, for sizes on both sides of OpenBLAS's small-matrix paths;
and with row strides wider than a row (a head's rows inside a projection) and beta 1
(an accumulation), against float64."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from sexpgpu.kernels import sgemm

SIZES = [(2, 3, 2), (5, 7, 3), (12, 64, 65), (64, 32, 64), (768, 128, 384), (33, 200, 17)]
LAYOUTS = ["nn", "nt", "tn", "tt"]


def _np_dot(ta: bool, tb: bool):
    # the text kernels/structured.py generated before: np.dot on reshaped views
    a = "p0[a_at:a_at + m * k].reshape((k, m)).T" if ta else "p0[a_at:a_at + m * k].reshape((m, k))"
    b = "p1[b_at:b_at + k * n].reshape((n, k)).T" if tb else "p1[b_at:b_at + k * n].reshape((k, n))"
    namespace = {"np": np, "numba": numba}
    exec(f"@numba.njit\ndef f(p0, a_at, p1, b_at, p2, o_at, m, k, n):\n"  # noqa: S102
         f"    np.dot({a}, {b}, p2[o_at:o_at + m * n].reshape((m, n)))\n", namespace)
    return namespace["f"]


def _call(layout: str):
    gemm = getattr(sgemm, f"gemm_{layout}")
    return numba.njit(lambda *args: gemm(*args))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sgemm_gives_np_dots_bits_for_every_layout(layout: str) -> None:
    ta, tb = layout[0] == "t", layout[1] == "t"
    call, reference = _call(layout), _np_dot(ta, tb)
    rng = np.random.default_rng(3)
    for m, k, n in SIZES:
        a = rng.standard_normal(m * k + 5).astype(np.float32)
        b = rng.standard_normal(k * n + 3).astype(np.float32)
        want, got = np.full(m * n + 4, np.nan, np.float32), np.full(m * n + 4, np.nan, np.float32)
        reference(a, 5, b, 3, want, 4, m, k, n)
        call(a, 5, m if ta else k, b, 3, k if tb else n, got, 4, n, m, k, n, 0.0)
        assert np.array_equal(got, want, equal_nan=True), (layout, m, k, n)
        assert np.isnan(got[:4]).all()  # nothing written before the output's offset
        # and the product is the matmul (float64 reference, f32 rounding)
        A = a[5:5 + m * k].reshape((k, m)).T if ta else a[5:5 + m * k].reshape((m, k))
        B = b[3:3 + k * n].reshape((n, k)).T if tb else b[3:3 + k * n].reshape((k, n))
        np.testing.assert_allclose(got[4:].reshape(m, n), A.astype(np.float64) @ B,
                                   rtol=1e-4, atol=1e-4 * np.sqrt(k))


def _rows(buf: np.ndarray, at: int, ld: int, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = shape
    return np.stack([buf[at + r * ld:at + r * ld + cols] for r in range(rows)])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_row_strides_and_beta(layout: str, beta: float) -> None:
    """Matrices whose rows lie apart (row stride wider than a row) are read and written
    in place, the gaps left alone; beta 1 adds the product to what is there."""
    ta, tb = layout[0] == "t", layout[1] == "t"
    rng = np.random.default_rng(4)
    m, k, n = 7, 5, 6
    a_shape, b_shape = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    lda, ldb, ldc = a_shape[1] + 3, b_shape[1] + 2, n + 4
    a = rng.standard_normal(2 + a_shape[0] * lda).astype(np.float32)
    b = rng.standard_normal(1 + b_shape[0] * ldb).astype(np.float32)
    c = rng.standard_normal(3 + m * ldc).astype(np.float32)
    before = c.copy()
    _call(layout)(a, 2, lda, b, 1, ldb, c, 3, ldc, m, k, n, beta)
    A, B = _rows(a, 2, lda, a_shape), _rows(b, 1, ldb, b_shape)
    A, B = (A.T if ta else A).astype(np.float64), B.T if tb else B
    want = A @ B + beta * _rows(before, 3, ldc, (m, n))
    np.testing.assert_allclose(_rows(c, 3, ldc, (m, n)), want, rtol=1e-5, atol=1e-5)
    written = np.zeros(c.size, bool)
    for r in range(m):
        written[3 + r * ldc:3 + r * ldc + n] = True
    assert np.array_equal(c[~written], before[~written])  # the gaps untouched
